"""confluent-kafka (librdkafka) consumers that commit in their revoke callback while a second member joins: every
commit is accepted and the new owner of a revoked partition reads nothing again.
Usage: confluent_commit_on_revoke.py BOOTSTRAP TOPIC PARTITIONS PER_PARTITION STRATEGY"""
import sys
import time
from confluent_kafka import Consumer, KafkaException, TopicPartition

bootstrap, topic, partitions, per_partition, strategy = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5]
group = "py-revoke-" + strategy
config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
          "enable.auto.commit": False, "partition.assignment.strategy": strategy,
          "session.timeout.ms": 6000, "heartbeat.interval.ms": 100}
first = Consumer(config)
second = Consumer(config)
failures, committed_on_revoke = [], {}


def on_revoke(consumer, revoked):
    if not revoked:
        return
    positions = consumer.position(revoked)
    try:
        consumer.commit(offsets=positions, asynchronous=False)
        for tp in positions:
            committed_on_revoke[tp.partition] = tp.offset
    except KafkaException as e:
        failures.append(str(e))


first.subscribe([topic], on_revoke=on_revoke)
consumed, deadline = 0, time.time() + 30
while consumed < partitions * per_partition and time.time() < deadline:
    for m in first.consume(num_messages=500, timeout=0.1):
        if m.error():
            raise SystemExit(f"consume error: {m.error()}")
        consumed += 1
assert consumed == partitions * per_partition, f"first member read {consumed}"

second.subscribe([topic])
reconsumed, deadline = 0, time.time() + 40
while time.time() < deadline:
    first.consume(num_messages=500, timeout=0.05)
    reconsumed += len([m for m in second.consume(num_messages=500, timeout=0.05) if not m.error()])
    if len(first.assignment()) == partitions // 2 and len(second.assignment()) == partitions // 2:
        break
assert len(second.assignment()) == partitions // 2, f"no rebalance: {second.assignment()}"
for _ in range(10):
    reconsumed += len([m for m in second.consume(num_messages=500, timeout=0.05) if not m.error()])

assert not failures, f"commits in the revoke callback failed: {failures}"
assert committed_on_revoke, "the revoke callback never committed"
for tp in first.committed([TopicPartition(topic, p) for p in committed_on_revoke], timeout=10):
    assert tp.offset == per_partition, f"committed offset of partition {tp.partition}: {tp.offset}"
assert reconsumed == 0, f"the new owner read {reconsumed} records again"
first.close()
second.close()
print("commit-on-revoke OK", strategy, "revoked", sorted(committed_on_revoke))
