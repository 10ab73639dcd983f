#!/usr/bin/env bash
# wal-fsx on a shared file system with injected latency (latencyfs, FUSE), next to fio on the same mount and to
# wal-blockdev and fio on the local disk: open-loop append latency at 1,000 and 10,000 appends/s (4 KiB), and
# throughput at 1 MiB writes, 4 in flight (the WAL's group-commit write size and depth when saturated).
#   benchmarks/compare/wal-fsx.sh                   # LATENCIES="0.5ms 2ms" SECONDS_PER_RUN=10
. "$(dirname "$0")/lib.sh"
LATENCIES="${LATENCIES:-0.5ms 2ms}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}"
setup_fio
build_shell
LATENCYFS="${S3STREAM_LATENCYFS_BIN:-/opt/s3stream-tools/bin/latencyfs}"
if [ ! -x "$LATENCYFS" ]; then
  LATENCYFS="$WORK/latencyfs"
  (cd "$ROOT/test-infra/latencyfs" && go build -o "$LATENCYFS" .)
fi
mkdir -p "$RUN"
machine | tee "$RUN/machine.txt" >&2
OUT="$RUN/results.tsv"
printf 'target\tlatency\tjob\tload\tresult\n' >"$OUT"
BENCH_CP="$ROOT/benchmarks/target/benchmarks.jar"

wal() { # target latency job args...
  local target="$1" lat="$2" job="$3"; shift 3
  quiet; local load="$LOAD"
  local line
  line="$("$JAVA" --enable-native-access=ALL-UNNAMED -Xmx1g -XX:MaxDirectMemorySize=1g -cp "$BENCH_CP" \
    io.s3stream.benchmarks.WalLatency "$@" warmup=3 seconds="$SECONDS_PER_RUN" 2>>"$RUN/wal.log" | tail -1)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$target" "$lat" "$job" "$load" "${line% description=*}" >>"$OUT"
  log "$target $lat $job (load $load): ${line% description=*}"
}

fio_job() { # target latency job dir bs numjobs
  local target="$1" lat="$2" job="$3" dir="$4" bs="$5" jobs="$6"
  quiet; local load="$LOAD"
  fio --name="$job" --directory="$dir" --rw=write --bs="$bs" --numjobs="$jobs" --ioengine=psync --direct=1 \
    --sync=dsync --size=64m --time_based --runtime="$SECONDS_PER_RUN" --group_reporting --output-format=json \
    >"$RUN/fio-$target-$lat-$job.json" 2>>"$RUN/fio.log"
  local v
  v="$(python3 - "$RUN/fio-$target-$lat-$job.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["jobs"][0]["write"]
p = w["clat_ns"]["percentile"]
print(f'iops={w["iops"]:.0f} mib_s={w["bw_bytes"] / 2**20:.1f} p50_ms={p["50.000000"] / 1e6:.3f} '
      f'p99_ms={p["99.000000"] / 1e6:.3f} p999_ms={p["99.900000"] / 1e6:.3f}')
PY
)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$target" "$lat" "fio-$job" "$load" "$v" >>"$OUT"
  log "$target $lat fio $job (load $load): $v"
  rm -f "$dir"/"$job".*
}

runs() { # target latency dir walUriPrefix
  local target="$1" lat="$2" dir="$3" uri="$4"
  fio_job "$target" "$lat" 4k-qd1 "$dir" 4k 1
  fio_job "$target" "$lat" 1m-x4 "$dir" 1m 4
  wal "$target" "$lat" 4k-1000/s wal="$uri" rate=1000 bytes=4096
  wal "$target" "$lat" 4k-10000/s wal="$uri" rate=10000 bytes=4096
  wal "$target" "$lat" 64k-window256 wal="$uri" mode=throughput bytes=65536 window=256
}

# The local disk: wal-blockdev and fio.
LOCAL="$WORK/disk-wal"
rm -rf "$LOCAL"; mkdir -p "$LOCAL"
runs local-disk - "$LOCAL" "blockdev://$LOCAL/wal.img?capacity=1GiB"
rm -rf "$LOCAL"

for lat in $LATENCIES; do
  BACKING="$WORK/fsx-backing"; MNT="$WORK/fsx-mnt"
  rm -rf "$BACKING"; mkdir -p "$BACKING" "$MNT"
  "$LATENCYFS" -backing "$BACKING" -mount "$MNT" -latency "$lat" -meta-latency "$lat" >"$RUN/latencyfs-$lat.log" 2>&1 &
  FS_PID=$!; PIDS+=("$FS_PID")
  for _ in $(seq 100); do grep -q READY "$RUN/latencyfs-$lat.log" && break; sleep 0.1; done
  mkdir -p "$MNT/wal"
  runs latencyfs "$lat" "$MNT" "fsx://$MNT/wal?capacity=1GiB&segmentBytes=256MiB"
  kill "$FS_PID"; wait "$FS_PID" 2>/dev/null || true
  rm -rf "$BACKING"
done

# Takeover time with TAKEOVER_MIB of acknowledged, not yet uploaded WAL: the owner on mount A, the survivor on mount B.
TAKEOVER_MIB="${TAKEOVER_MIB:-256}"
TAKEOVER_LATENCY="${TAKEOVER_LATENCY:-1ms}"
BACKING="$WORK/fsx-backing"; rm -rf "$BACKING" "$WORK/takeover-objects"; mkdir -p "$BACKING"
for m in a b; do
  mkdir -p "$WORK/fsx-$m"
  "$LATENCYFS" -backing "$BACKING" -mount "$WORK/fsx-$m" -latency "$TAKEOVER_LATENCY" -meta-latency "$TAKEOVER_LATENCY" \
    >"$RUN/latencyfs-$m.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do grep -q READY "$RUN/latencyfs-$m.log" && break; sleep 0.1; done
done
mkdir -p "$WORK/fsx-a/wal"
quiet
line="$("$JAVA" --enable-native-access=ALL-UNNAMED -Xmx1g -XX:MaxDirectMemorySize=1g -cp "$BENCH_CP" \
  io.s3stream.benchmarks.TakeoverTime "ownerWal=fsx://$WORK/fsx-a/wal?capacity=1GiB&segmentBytes=256MiB" \
  "survivorWal=fsx://$WORK/fsx-b/wal?capacity=1GiB&segmentBytes=256MiB" "store=file://$WORK/takeover-objects" \
  mib="$TAKEOVER_MIB" streams=16 2>>"$RUN/wal.log" | tail -1)"
printf '%s\t%s\t%s\t%s\t%s\n' latencyfs-2-mounts "$TAKEOVER_LATENCY" "takeover-${TAKEOVER_MIB}MiB" "$LOAD" "$line" >>"$OUT"
log "takeover with $TAKEOVER_MIB MiB (load $LOAD): $line"
column -t -s $'\t' "$OUT"
