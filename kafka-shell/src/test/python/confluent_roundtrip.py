"""confluent-kafka (librdkafka) against kafka-shell: produce with keys, headers and each compression codec, then
consume everything back in a consumer group and check it. Usage: confluent_roundtrip.py BOOTSTRAP TOPIC_PREFIX"""
import sys
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, prefix = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(prefix + "-admin", num_partitions=2, replication_factor=1)]).values():
    f.result()
assert prefix + "-admin" in admin.list_topics(timeout=10).topics

expected = {}
for codec in ["gzip", "lz4", "zstd", "snappy", "none"]:
    topic = f"{prefix}-{codec}"
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 5})
    errors = []
    for i in range(300):
        p.produce(topic, key=f"k{i % 5}", value=f"{codec}-{i}" * 3, headers=[("h", f"x{i}".encode())],
                  on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(30) == 0, "unflushed messages"
    assert not errors, errors
    expected[topic] = 300

for topic, n in expected.items():
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "py-" + topic, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    for _ in range(200):
        for m in c.consume(num_messages=500, timeout=0.2):
            if m.error():
                raise SystemExit(f"consume error: {m.error()}")
            got.append(m)
        if len(got) >= n:
            break
    c.commit(asynchronous=False)
    c.close()
    assert len(got) == n, f"{topic}: got {len(got)} of {n}"
    for m in got:
        assert m.key().decode().startswith("k")
        assert dict(m.headers())["h"].startswith(b"x")
    offsets = sorted(m.offset() for m in got)
    assert offsets == list(range(n)), f"{topic}: offsets not contiguous"
print("confluent-kafka OK", sum(expected.values()), "records")
