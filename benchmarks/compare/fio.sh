#!/usr/bin/env bash
# Physical limits next to the WAL: fio sequential writes with O_DIRECT|O_DSYNC on a pre-written file on the same file
# system as the WAL benchmark's file, then WalAppendBenchmark (wal-blockdev on a preallocated file there), alternating
# fio/WAL for ROUNDS rounds; prints medians.
#   benchmarks/compare/fio.sh               # ROUNDS=3 DIR=benchmarks/compare/.work/disk SECONDS_PER_JOB=10
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
DIR="${DIR:-$WORK/disk}"
SECONDS_PER_JOB="${SECONDS_PER_JOB:-10}"
setup_fio
build_shell
mkdir -p "$DIR" "$RUN"
machine | tee "$RUN/machine.txt" >&2
FILE="$DIR/fio.img"
prewritten "$FILE"
TSV="$RUN/fio.tsv"
printf 'round\tjob\tload\tiops\tmb_s\tp50_us\tp99_us\n' >"$TSV"
# name bs iodepth engine
JOBS=("4k-qd1 4k 1 psync" "64k-qd1 64k 1 psync" "64k-qd4 64k 4 io_uring" "1m-qd1 1m 1 psync")
for ((round = 1; round <= ROUNDS; round++)); do
  for job in "${JOBS[@]}"; do
    set -- $job
    quiet; load="$LOAD"
    fio --name="$1" --filename="$FILE" --rw=write --bs="$2" --iodepth="$3" --ioengine="$4" --direct=1 --sync=dsync \
      --size=1g --time_based --runtime="$SECONDS_PER_JOB" --output-format=json >"$RUN/fio-$1-$round.json"
    python3 - "$RUN/fio-$1-$round.json" <<'PY' | { read -r v; printf '%s\t%s\t%s\t%s\n' "$round" "$1" "$load" "$v" >>"$TSV"; }
import json, sys
w = json.load(open(sys.argv[1]))["jobs"][0]["write"]
p = w["clat_ns"]["percentile"]
print(f'{w["iops"]:.0f}\t{w["bw_bytes"] / 1e6:.1f}\t{p["50.000000"] / 1000:.0f}\t{p["99.000000"] / 1000:.0f}')
PY
    log "round $round fio $1 (load $load): $(tail -1 "$TSV" | cut -f4-)"
  done
  quiet; load="$LOAD"
  log "round $round WalAppendBenchmark blockdev (load $load)"
  "$JAVA" -jar "$ROOT/benchmarks/target/benchmarks.jar" 'WalAppendBenchmark' -p backend=blockdev \
    -p recordBytes=4096,65536 -p window=1,16 -wi 2 -w 2s -i 3 -r "$((SECONDS_PER_JOB / 3 + 1))s" \
    -jvmArgsAppend "-Ds3stream.bench.dir=$DIR" -rf json -rff "$RUN/wal-$round.json" >"$RUN/wal-$round.log" 2>&1
  python3 - "$RUN/wal-$round.json" "$round" "$load" <<'PY' >>"$TSV"
import json, sys
for b in json.load(open(sys.argv[1])):
    p = b["params"]; ops = b["primaryMetric"]["score"]; size = int(p["recordBytes"])
    window = f'-w{p["window"]}' if "window" in p else ""
    name = f'wal-{b["benchmark"].split(".")[-1]}-{size // 1024}k{window}'
    print(f'{sys.argv[2]}\t{name}\t{sys.argv[3]}\t{ops:.0f}\t{ops * size / 1e6:.1f}\t-\t-')
PY
done
python3 - "$TSV" <<'PY'
import csv, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = defaultdict(list)
for r in rows:
    by[r["job"]].append(r)
def med(vals):
    v = [float(x) for x in vals if x not in ("-", "")]
    return f"{statistics.median(v):,.0f}" if v else "-"
n = max(len(v) for v in by.values())
print(f"\nO_DIRECT|O_DSYNC sequential writes, medians of {n} rounds (fio: IOPS = writes/s; WAL: appends/s, "
      "appenders1/4 = JMH threads, w = appends in flight per thread)\n")
print("| job | writes or appends /s | MB/s | p50 us | p99 us | load |")
print("|---|---:|---:|---:|---:|---|")
for job, rs in by.items():
    ls = sorted(float(r["load"]) for r in rs)
    print(f'| {job} | {med(r["iops"] for r in rs)} | {med(r["mb_s"] for r in rs)} | {med(r["p50_us"] for r in rs)} | '
          f'{med(r["p99_us"] for r in rs)} | {ls[0]:.1f}-{ls[-1]:.1f} |')
PY
plot "$TSV" "$RUN/fio.svg" "fio vs wal-blockdev, $(date -u +%Y-%m-%d)"
