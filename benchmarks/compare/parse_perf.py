"""Parses the summary line of Kafka's ProducerPerformance / ConsumerPerformance output (stdin) into numbers."""
import re
import sys

text = sys.stdin.read()
if sys.argv[1] == "producer":
    # "N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, P50 ms 50th, P95 ms 95th,
    #  P99 ms 99th, P999 ms 99.9th." With --warmup-records the steady-state line ("N steady state records sent, ...")
    #  comes last, and is the one reported: until 2026-11-25 this pattern missed it and the whole run, warm-up
    #  included, was reported.
    pat = re.compile(r"([\d.]+) (?:steady state )?records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                     r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th")
    lines = [m for m in pat.finditer(text)]
    if not lines:
        sys.exit("no ProducerPerformance summary in:\n" + text[-2000:])
    m = lines[-1]
    print(m.group(2), m.group(3), m.group(4), m.group(6), m.group(8), m.group(9))
else:
    # CSV header then values: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    rows = [l for l in text.splitlines() if re.match(r"^\d{4}-\d\d-\d\d", l)]
    if not rows:
        sys.exit("no ConsumerPerformance summary in:\n" + text[-2000:])
    f = [x.strip() for x in rows[-1].split(",")]
    print(f[8], f[9])
