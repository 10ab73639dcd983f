"""confluent-kafka (librdkafka) on a compacted topic.
Usage: confluent_compacted.py produce BOOTSTRAP  -- creates py-compact (cleanup.policy=compact) and writes 10 rounds
                                                    over 200 keys, then deletes keys 0..19; a keyless record is refused
       confluent_compacted.py consume BOOTSTRAP  -- reads py-compact from the start (after compaction) and checks that
                                                    it sees each key's latest record once, offsets increasing"""
import sys
import time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

mode, bootstrap = sys.argv[1], sys.argv[2]
TOPIC = "py-compact"

if mode == "produce":
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, 1, config={"cleanup.policy": "compact",
                                                              "min.cleanable.dirty.ratio": "0.01"})]).values():
        f.result()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for r in range(10):
        for k in range(200):
            p.produce(TOPIC, key=f"key-{k}".encode(), value=f"v{r}-{k}".encode(), partition=0)
    for k in range(20):
        p.produce(TOPIC, key=f"key-{k}".encode(), value=None, partition=0)
    assert p.flush(30) == 0, "records not delivered"
    errors = []
    strict = Producer({"bootstrap.servers": bootstrap, "retries": 0})
    strict.produce(TOPIC, value=b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err))
    strict.flush(30)
    assert errors and errors[0] is not None, errors
    print(f"confluent-kafka produced 2020 records; keyless refused: {errors[0].name()}")
elif mode == "consume":
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"py-compact-{time.time_ns()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    seen, offsets, last = {}, [], time.time()
    while time.time() - last < 2.0:
        for m in c.consume(num_messages=500, timeout=0.1):
            if m.error():
                raise SystemExit(f"consume error: {m.error()}")
            offsets.append(m.offset())
            key = m.key().decode()
            assert key not in seen, f"{key} seen twice: superseded records left at offset {m.offset()}"
            seen[key] = (m.offset(), None if m.value() is None else m.value().decode())
            last = time.time()
    c.close()
    assert offsets == sorted(offsets), "offsets out of order"
    assert len(seen) == 200, f"saw {len(seen)} keys"
    for k in range(200):
        offset, value = seen[f"key-{k}"]
        if k < 20:
            assert value is None and offset == 2000 + k, (k, offset, value)
        else:
            assert value == f"v9-{k}" and offset == 1800 + k, (k, offset, value)
    print(f"confluent-kafka compacted OK {len(offsets)} records")
