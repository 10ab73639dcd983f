#!/usr/bin/env bash
# What a durable acknowledgement costs on this disk at the produce tests' pace: fio writes of the size kafka-shell's WAL
# writes at 2,000 and 10,000 rec/s (about 12 and 52 KiB: 1 KiB records, linger.ms=5, one group every ~5 ms), paced at
# RATE writes/s, three ways: O_DIRECT|O_DSYNC (the WAL's synchronous write: data, the inode's mtime, a cache flush),
# O_DIRECT alone (the data reaches the device, not its stable storage), and buffered writes into the page cache
# (Kafka's default acknowledgement: nothing reaches the device). Rounds alternate the modes; prints median latency
# percentiles per mode and size. The difference between the first and the last row is the floor a flushed ack adds.
#   benchmarks/compare/fio-paced.sh             # ROUNDS=3 RATE=200 SECONDS_PER_JOB=20 DIR=benchmarks/compare/.work/disk
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
RATE="${RATE:-200}"
SECONDS_PER_JOB="${SECONDS_PER_JOB:-20}"
DIR="${DIR:-$WORK/disk}"
setup_fio
mkdir -p "$DIR" "$RUN"
machine | tee "$RUN/machine.txt" >&2
FILE="$DIR/fio-paced.img"
prewritten "$FILE"
TSV="$RUN/fio-paced.tsv"
printf 'round\tmode\tbs\tload\twrites_s\tp50_us\tp99_us\tp999_us\tmax_us\n' >"$TSV"
# mode and its fio options
MODES=("dsync --direct=1 --sync=dsync" "direct --direct=1" "buffered --direct=0")
for ((round = 1; round <= ROUNDS; round++)); do
  for mode in "${MODES[@]}"; do
    set -- $mode
    name="$1"; shift
    for bs in 12k 52k; do
      quiet; load="$LOAD"
      fio --name="$name-$bs" --filename="$FILE" --size=1g --rw=write --bs="$bs" --iodepth=1 --ioengine=psync "$@" \
        --rate_iops="$RATE" --time_based --runtime="$SECONDS_PER_JOB" --percentile_list=50:99:99.9 \
        --output-format=json >"$RUN/fio-$name-$bs-$round.json"
      python3 - "$RUN/fio-$name-$bs-$round.json" <<'PY' | { read -r v; printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$bs" "$load" "$v" >>"$TSV"; }
import json, sys
w = json.load(open(sys.argv[1]))["jobs"][0]["write"]
p = w["clat_ns"]["percentile"]
print(f'{w["iops"]:.0f}\t{p["50.000000"] / 1000:.0f}\t{p["99.000000"] / 1000:.0f}\t{p["99.900000"] / 1000:.0f}'
      f'\t{w["lat_ns"]["max"] / 1000:.0f}')
PY
      log "round $round $name $bs (load $load): $(tail -1 "$TSV" | cut -f5-)"
    done
  done
done
python3 - "$TSV" <<'PY'
import csv, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = defaultdict(list)
for r in rows:
    by[(r["mode"], r["bs"])].append(r)
print("\nfio, one writer, paced; medians over rounds; latency of each write in microseconds\n")
print("| mode | write | writes/s | p50 | p99 | p99.9 | max | load |")
print("|---|---|---:|---:|---:|---:|---:|---|")
for (mode, bs), rs in by.items():
    med = {k: statistics.median(float(r[k]) for r in rs) for k in ("writes_s", "p50_us", "p99_us", "p999_us", "max_us")}
    loads = [float(r["load"]) for r in rs]
    print(f"| {mode} | {bs} | {med['writes_s']:.0f} | {med['p50_us']:.0f} | {med['p99_us']:.0f} | {med['p999_us']:.0f}"
          f" | {med['max_us']:.0f} | {min(loads):.1f}-{max(loads):.1f} |")
PY
