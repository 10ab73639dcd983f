"""confluent-kafka (librdkafka) transactional producer against kafka-shell, which has no transactions yet:
init_transactions must fail within its timeout with a fatal error, not retry forever.
Usage: confluent_transactions_fail_fast.py BOOTSTRAP"""
import sys
import time
from confluent_kafka import KafkaException, Producer

p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "py-txn"})
started = time.time()
try:
    p.init_transactions(30)
    raise SystemExit("init_transactions succeeded against a broker without transactions")
except KafkaException as e:
    err = e.args[0]
    took = time.time() - started
    print(f"init_transactions failed after {took:.1f} s: code={err.name()} fatal={err.fatal()} "
          f"retriable={err.retriable()} str={err.str()}")
    assert not err.retriable(), "a retriable error: the application would retry forever"
    assert took < 25, f"took {took:.1f} s"
print("transactions fail fast OK")
