"""confluent-kafka (librdkafka) on a compacted topic written in transactions, read after compaction removed the commit
markers of transactions with no record left (empty control batches and gaps where markers were).
Usage: confluent_compacted_txn.py produce BOOTSTRAP  -- creates py-compact-txn (compact, delete.retention.ms=1000) and
                                                        writes 20 committed transactions over keys 0..9, an aborted
                                                        one, and a last committed one of key-0: offsets 0..232
       confluent_compacted_txn.py consume BOOTSTRAP  -- reads it with read_committed and read_uncommitted: each key's
                                                        latest committed value once, nothing aborted, up to the end"""
import sys
import time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

mode, bootstrap = sys.argv[1], sys.argv[2]
TOPIC = "py-compact-txn"
END = 233

if mode == "produce":
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, 1, config={"cleanup.policy": "compact",
                                                              "min.cleanable.dirty.ratio": "0.01",
                                                              "delete.retention.ms": "1000"})]).values():
        f.result()
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "py-compact-txn"})
    p.init_transactions(30)
    for t in range(20):
        p.begin_transaction()
        for k in range(10):
            p.produce(TOPIC, key=f"key-{k}".encode(), value=f"t{t}-{k}".encode(), partition=0)
        p.commit_transaction(30)
    p.begin_transaction()
    for k in range(10):
        p.produce(TOPIC, key=f"key-{k}".encode(), value=b"aborted", partition=0)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(TOPIC, key=b"key-0", value=b"last", partition=0)
    p.commit_transaction(30)
    print("confluent-kafka produced 22 transactions")
elif mode == "consume":
    expected = {f"key-{k}": f"t19-{k}" for k in range(1, 10)}
    expected["key-0"] = "last"
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"py-compact-txn-{time.time_ns()}",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": isolation})
        tp = TopicPartition(TOPIC, 0, 0)
        c.assign([tp])
        seen, offsets, last = {}, [], time.time()
        while time.time() - last < 2.0:
            for m in c.consume(num_messages=500, timeout=0.1):
                if m.error():
                    raise SystemExit(f"{isolation}: consume error: {m.error()}")
                offsets.append(m.offset())
                key = m.key().decode()
                assert key not in seen, f"{isolation}: {key} seen twice (offset {m.offset()})"
                seen[key] = m.value().decode()
                last = time.time()
        position = c.position([TopicPartition(TOPIC, 0)])[0].offset
        low, high = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        c.close()
        assert offsets == sorted(offsets), f"{isolation}: offsets out of order"
        assert seen == expected, f"{isolation}: saw {seen}"
        assert high == END, f"{isolation}: high watermark {high}"
        # The last record is at 231 and the last marker at 232: the consumer's position passes it, to the end.
        assert position == END, f"{isolation}: position {position}"
        print(f"confluent-kafka {isolation} OK {len(offsets)} records, position {position}")
