"""Prints the comparison table (medians over rounds, ratios of medians) from a run's TSV. Usage: summarize.py kind tsv"""
import csv
import statistics
import sys
from collections import defaultdict

kind, path = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path), delimiter="\t"))


def med(values):
    vals = [float(v) for v in values if v not in ("-", "", None)]
    return statistics.median(vals) if vals else float("nan")


def fmt(x):
    if x != x:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}" if abs(x) >= 10 else f"{x:,.2f}"


def ratio(a, b):
    return "-" if not b or a != a or b != b else f"{a / b:.2f}x"


def loads(rs):
    """The 1-min load range over the runs and, where the TSV has it, the range of CPU seconds stolen per run."""
    ls = sorted(float(r["load"]) for r in rs)
    if not ls:
        return "-"
    steals = sorted(float(r["steal_s"]) for r in rs if r.get("steal_s") not in (None, "", "-"))
    return f"{ls[0]:.1f}-{ls[-1]:.1f}" + (f", stolen {steals[0]:.1f}-{steals[-1]:.1f} s" if steals else "")


if kind == "produce-consume":
    systems = ["kafka", "kafka-flush1", "shell"]
    by = defaultdict(list)
    for r in rows:
        by[(r["test"], r["system"])].append(r)
    # The no-op broker (stores nothing) is the yardstick, shown when the run had it: its throughput is the most any
    # broker can give the producer on this machine, its latency the least; "no-op / best Kafka" is the most (throughput)
    # or the least (latency) any broker's ratio to the better Kafka configuration can be here.
    noop = any(r["system"] == "noop" for r in rows)
    def per_million(column, minus=None):
        """CPU seconds per million records of the run, from TSVs that have the columns (those from 2026-12-04 on)."""
        def value(r):
            if r.get(column) in (None, "", "-") or r.get("records") in (None, "", "-", "0"):
                return "-"
            cpu = float(r[column]) - (float(r[minus]) if minus else 0.0)
            return cpu * 1e6 / float(r["records"])
        return value

    broker_cpu = ("broker CPU s / 1M records", per_million("broker_cpu_s"), min)
    rest_cpu = ("rest of the machine CPU s / 1M records", per_million("machine_cpu_s", "broker_cpu_s"), min)
    metrics = {
        "unthrottled": [("rec/s", "rec_s", max), ("MB/s", "mb_s", max), ("p99 ms", "p99_ms", min), broker_cpu,
                        rest_cpu],
        "unthrottled16": [("rec/s", "rec_s", max), ("MB/s", "mb_s", max), ("p99 ms", "p99_ms", min), broker_cpu,
                          rest_cpu],
        "rate2000": [("achieved rec/s", "rec_s", max), ("p50 ms", "p50_ms", min), ("p99 ms", "p99_ms", min),
                     ("p99.9 ms", "p999_ms", min)],
        "rate10000": [("achieved rec/s", "rec_s", max), ("p50 ms", "p50_ms", min), ("p99 ms", "p99_ms", min),
                      ("p99.9 ms", "p999_ms", min)],
        "consume": [("fetch MB/s", "mb_s", max), broker_cpu],
    }
    n = max(len(v) for v in by.values())
    print(f"\nmedians of {n} rounds; ratios are shell / kafka of the medians; load = 1-min load range over the runs (and the CPU seconds the hypervisor stole per run)\n")
    extra = " no-op broker | shell/no-op | no-op/best Kafka |" if noop else ""
    print("| test | metric | Kafka (default flush) | Kafka flush.messages=1 | kafka-shell | shell/Kafka | shell/Kafka-flush1 |"
          + extra + " load |")
    print("|---|---|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if noop else "") + "---|")
    for test, ms in metrics.items():
        if not any(by[(test, s)] for s in systems):
            continue  # not run (TESTS), or a table from before the test existed
        for label, key, better in ms:
            v = {s: med(key(r) if callable(key) else r[key] for r in by[(test, s)]) for s in systems + ["noop"]}
            if all(x != x for x in v.values()):
                continue  # a column this TSV does not have
            allr = [r for s in systems + ["noop"] for r in by[(test, s)]]
            cells = ""
            if noop:
                kafkas = [x for x in (v["kafka"], v["kafka-flush1"]) if x == x]
                best = better(kafkas) if kafkas else float("nan")
                cells = f" {fmt(v['noop'])} | {ratio(v['shell'], v['noop'])} | {ratio(v['noop'], best)} |"
            print(f"| {test} | {label} | {fmt(v['kafka'])} | {fmt(v['kafka-flush1'])} | {fmt(v['shell'])} | "
                  f"{ratio(v['shell'], v['kafka'])} | {ratio(v['shell'], v['kafka-flush1'])} |{cells} {loads(allr)} |")
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
    for s in ["kafka", "shell", "noop"]:
        b, d = by[(s, "before")], by[(s, "during")]
        if not b and not d:
            continue  # not run (SYSTEMS), or a table from before the yardstick
        pb, pd = med(r["p99_ms"] for r in b), med(r["p99_ms"] for r in d)
        qb, qd = med(r["p999_ms"] for r in b), med(r["p999_ms"] for r in d)
        cu = med(r["catchup_mb_s"] for r in d)
        rise = "-" if not pb else f"{(pd / pb - 1) * 100:+.0f} %"
        label = "no-op broker (consumers read the shell's backlog)" if s == "noop" else s
        print(f"| {label} | {fmt(pb)} | {fmt(pd)} | {rise} | {fmt(qb)} | {fmt(qd)} | {fmt(cu)} | {loads(b + d)} |")
elif kind == "device-stalls":
    by = defaultdict(list)
    for r in rows:
        by[r["system"]].append(r)
    n = max(len(v) for v in by.values())
    print(f"\nproducer at a fixed rate, 1 KiB acks=all; latencies are medians of {n} rounds, counts are sums over them;"
          " \"in a stall\": waiting while a probe write took >= 10 ms\n")
    print("| system | p99 ms | p99.9 ms | max ms | probe writes >= 10 / >= 20 ms | longest probe write ms"
          " | records >= 10 ms (in a stall) | records >= 20 ms (in a stall) | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")

    def total(rs, k):
        return sum(int(r[k]) for r in rs)

    for s in ["kafka", "kafka-flush1", "shell", "noop"]:
        rs = by[s]
        if not rs:
            continue
        def slow(k):  # "records (of them in a stall, share)"
            t, i = total(rs, k), total(rs, k + "_in_stall")
            return f"{t} ({i}, {i / t:.0%})" if t else "0"
        print(f"| {s} | {fmt(med(r['p99_ms'] for r in rs))} | {fmt(med(r['p999_ms'] for r in rs))} | "
              f"{fmt(med(r['max_ms'] for r in rs))} | {total(rs, 'stalls10')} / {total(rs, 'stalls20')} | "
              f"{max(float(r['stall_max_ms']) for r in rs):.0f} | {slow('slow10')} | {slow('slow20')} | {loads(rs)} |")
