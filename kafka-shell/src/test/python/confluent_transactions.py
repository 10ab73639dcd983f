"""confluent-kafka (librdkafka) transactions: a committed and an aborted transaction over three partitions, then a
consume-transform-produce step that commits its input offsets with send_offsets_to_transaction. A read_committed
consumer must see exactly the committed records; the group's offsets must be those sent with the transaction.
Usage: confluent_transactions.py BOOTSTRAP"""
import sys
import time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap = sys.argv[1]
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic("py-txn", 3, 1), NewTopic("py-txn-out", 3, 1)]).values():
    f.result()

p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "py-txn-1"})
p.init_transactions(30)
p.begin_transaction()
for i in range(30):
    p.produce("py-txn", value=f"committed-{i}".encode(), partition=i % 3)
p.commit_transaction(30)
p.begin_transaction()
for i in range(20):
    p.produce("py-txn", value=f"aborted-{i}".encode(), partition=i % 3)
p.flush(30)
p.abort_transaction(30)


def read_all(topic, isolation, quiet=1.5):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"py-read-{time.time_ns()}",
                  "auto.offset.reset": "earliest", "isolation.level": isolation, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(3)])
    values, last = [], time.time()
    while time.time() - last < quiet:
        for m in c.consume(num_messages=500, timeout=0.1):
            if m.error():
                raise SystemExit(f"consume error: {m.error()}")
            values.append(m.value().decode())
            last = time.time()
    c.close()
    return values


committed = read_all("py-txn", "read_committed")
assert sorted(committed) == sorted(f"committed-{i}" for i in range(30)), f"read_committed saw {sorted(committed)}"
uncommitted = read_all("py-txn", "read_uncommitted")
assert len(uncommitted) == 50, f"read_uncommitted saw {len(uncommitted)}"

# Consume-transform-produce: read py-txn (committed records only), write py-txn-out, commit the input offsets.
group = "py-ctp"
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "isolation.level": "read_committed", "enable.auto.commit": False})
c.subscribe(["py-txn"])
processed, deadline = 0, time.time() + 40
while processed < 30 and time.time() < deadline:
    msgs = [m for m in c.consume(num_messages=10, timeout=0.2) if not m.error()]
    if not msgs:
        continue
    p.begin_transaction()
    for m in msgs:
        p.produce("py-txn-out", value=m.value().replace(b"committed", b"out"), partition=m.partition())
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
    p.commit_transaction(30)
    processed += len(msgs)
assert processed == 30, f"processed {processed}"
offsets = {tp.partition: tp.offset for tp in c.committed([TopicPartition("py-txn", q) for q in range(3)], timeout=10)}
c.close()
# Each partition holds 10 committed records, 10 aborted ones and two markers: the position after the last committed
# record is past the abort marker (offset 22) when the consumer reached the end.
assert all(o >= 10 for o in offsets.values()), f"committed offsets {offsets}"
out = read_all("py-txn-out", "read_committed")
assert sorted(out) == sorted(f"out-{i}" for i in range(30)), f"output {sorted(out)}"
print("confluent transactions OK", offsets)
