"""confluent-kafka (librdkafka) with the KIP-848 consumer group protocol (group.protocol=consumer): one member gets
all four partitions and reads every record; a second member joins and the partitions split 2/2 with none owned
twice; both commit; the committed offsets cover every record. Usage: confluent_consumer_protocol.py BOOTSTRAP"""
import sys
import time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap = sys.argv[1]
TOPIC, GROUP = "py-kip848", "py-kip848-group"
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(TOPIC, 4, 1)]).values():
    f.result()
p = Producer({"bootstrap.servers": bootstrap})
for i in range(400):
    p.produce(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 4)
assert p.flush(30) == 0


def member(name, owned):
    def on_assign(c, partitions):
        owned.update((tp.topic, tp.partition) for tp in partitions)

    def on_revoke(c, partitions):
        owned.difference_update((tp.topic, tp.partition) for tp in partitions)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": name})
    c.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    return c


owned_a, owned_b = set(), set()
a = member("a", owned_a)
seen, deadline = set(), time.time() + 40
while len(seen) < 400 and time.time() < deadline:
    for m in a.consume(num_messages=500, timeout=0.2):
        if m.error():
            raise SystemExit(f"consume error: {m.error()}")
        seen.add(m.value().decode())
assert len(seen) == 400, f"member a read {len(seen)} of 400 records"
assert len(owned_a) == 4, f"member a owns {sorted(owned_a)}"
a.commit(asynchronous=False)

b = member("b", owned_b)
deadline = time.time() + 40
while not (len(owned_a) == 2 and len(owned_b) == 2) and time.time() < deadline:
    a.consume(num_messages=10, timeout=0.1)
    b.consume(num_messages=10, timeout=0.1)
assert len(owned_a) == 2 and len(owned_b) == 2, f"a owns {sorted(owned_a)}, b owns {sorted(owned_b)}"
assert not (owned_a & owned_b), "a partition owned twice"

committed = a.committed([TopicPartition(TOPIC, i) for i in range(4)], timeout=10)
assert sum(tp.offset for tp in committed) == 400, [(tp.partition, tp.offset) for tp in committed]
a.close()
b.close()
print(f"confluent-kafka consumer protocol OK: a {sorted(x[1] for x in owned_a)}, b {sorted(x[1] for x in owned_b)}")
