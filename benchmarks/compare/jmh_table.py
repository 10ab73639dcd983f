"""Markdown table from JMH JSON results (-rf json): score ± error, and gc.alloc.rate.norm (B/op) from -prof gc."""
import json
import sys

print("| benchmark | params | score | error | unit | alloc B/op |")
print("|---|---|---:|---:|---|---:|")
for path in sys.argv[1:]:
    for b in json.load(open(path)):
        name = b["benchmark"].replace("io.s3stream.benchmarks.", "")
        params = " ".join(f"{k}={v}" for k, v in sorted(b.get("params", {}).items()))
        m = b["primaryMetric"]
        alloc = b.get("secondaryMetrics", {}).get("gc.alloc.rate.norm", {}).get("score")
        try:
            err = float(m.get("scoreError"))
            err = "-" if err != err else f"{err:,.0f}"
        except (TypeError, ValueError):
            err = "-"
        print(f"| {name} | {params} | {m['score']:,.0f} | {err} | {m['scoreUnit']} | "
              f"{'-' if alloc is None else f'{alloc:,.0f}'} |")
