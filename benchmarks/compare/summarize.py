"""Prints the comparison table (medians over rounds, ratios of medians) from a run's TSV. Usage: summarize.py kind tsv"""
import csv
import statistics
import sys
from collections import defaultdict

kind, path = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path), delimiter="\t"))


def med(values):
    vals = [float(v) for v in values if v not in ("-", "")]
    return statistics.median(vals) if vals else float("nan")


def fmt(x):
    if x != x:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}" if abs(x) >= 10 else f"{x:,.2f}"


def ratio(a, b):
    return "-" if not b or a != a or b != b else f"{a / b:.2f}x"


def loads(rs):
    ls = sorted(float(r["load"]) for r in rs)
    return f"{ls[0]:.1f}-{ls[-1]:.1f}" if ls else "-"


if kind == "produce-consume":
    systems = ["kafka", "kafka-flush1", "shell"]
    by = defaultdict(list)
    for r in rows:
        by[(r["test"], r["system"])].append(r)
    metrics = {
        "unthrottled": [("rec/s", "rec_s"), ("MB/s", "mb_s"), ("p99 ms", "p99_ms")],
        "unthrottled16": [("rec/s", "rec_s"), ("MB/s", "mb_s"), ("p99 ms", "p99_ms")],
        "rate2000": [("achieved rec/s", "rec_s"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("p99.9 ms", "p999_ms")],
        "rate10000": [("achieved rec/s", "rec_s"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("p99.9 ms", "p999_ms")],
        "consume": [("fetch MB/s", "mb_s")],
    }
    n = max(len(v) for v in by.values())
    print(f"\nmedians of {n} rounds; ratios are shell / kafka of the medians; load = 1-min load range over the runs\n")
    print("| test | metric | Kafka (default flush) | Kafka flush.messages=1 | kafka-shell | shell/Kafka | shell/Kafka-flush1 | load |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for test, ms in metrics.items():
        if not any(by[(test, s)] for s in systems):
            continue  # not run (TESTS), or a table from before the test existed
        for label, key in ms:
            v = {s: med(r[key] for r in by[(test, s)]) for s in systems}
            allr = [r for s in systems for r in by[(test, s)]]
            print(f"| {test} | {label} | {fmt(v['kafka'])} | {fmt(v['kafka-flush1'])} | {fmt(v['shell'])} | "
                  f"{ratio(v['shell'], v['kafka'])} | {ratio(v['shell'], v['kafka-flush1'])} | {loads(allr)} |")
elif kind == "transactions":
    systems = ["kafka", "kafka-flush1", "shell"]
    by = defaultdict(list)
    for r in rows:
        by[r["system"]].append(r)
    metrics = [("transactions/s", "txn_s"), ("records/s", "rec_s"), ("MB/s", "mb_s"), ("record p50 ms", "rec_p50_ms"),
               ("record p99 ms", "rec_p99_ms"), ("commit p50 ms", "commit_p50_ms"), ("commit p99 ms", "commit_p99_ms"),
               ("transaction p50 ms", "txn_p50_ms"), ("transaction p99 ms", "txn_p99_ms")]
    n = max(len(v) for v in by.values())
    print(f"\nmedians of {n} rounds; ratios are shell / kafka of the medians; load = 1-min load range over the runs\n")
    print("| metric | Kafka (default flush) | Kafka flush.messages=1 | kafka-shell | shell/Kafka | shell/Kafka-flush1 | load |")
    print("|---|---:|---:|---:|---:|---:|---|")
    allr = [r for s in systems for r in by[s]]
    for label, key in metrics:
        v = {s: med(r[key] for r in by[s]) for s in systems}
        print(f"| {label} | {fmt(v['kafka'])} | {fmt(v['kafka-flush1'])} | {fmt(v['shell'])} | "
              f"{ratio(v['shell'], v['kafka'])} | {ratio(v['shell'], v['kafka-flush1'])} | {loads(allr)} |")
elif kind == "catch-up":
    by = defaultdict(list)
    for r in rows:
        by[(r["system"], r["phase"])].append(r)
    n = max(len(v) for v in by.values())
    print(f"\nproducer at a fixed rate, 1 KiB acks=all; medians of {n} rounds; rise = during / before of the medians\n")
    print("| system | p99 before (ms) | p99 during (ms) | p99 rise | p99.9 before | p99.9 during | catch-up MB/s | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for s in ["kafka", "shell"]:
        b, d = by[(s, "before")], by[(s, "during")]
        pb, pd = med(r["p99_ms"] for r in b), med(r["p99_ms"] for r in d)
        qb, qd = med(r["p999_ms"] for r in b), med(r["p999_ms"] for r in d)
        cu = med(r["catchup_mb_s"] for r in d)
        rise = "-" if not pb else f"{(pd / pb - 1) * 100:+.0f} %"
        print(f"| {s} | {fmt(pb)} | {fmt(pd)} | {rise} | {fmt(qb)} | {fmt(qd)} | {fmt(cu)} | {loads(b + d)} |")
