#!/usr/bin/env bash
# kafka-shell's producer latency per WAL: ProducerPerformance at a fixed RATE (1 KiB records, acks=all, linger.ms=5)
# against kafka-shell on wal-blockdev (local disk, the default), on wal-fsx in a latencyfs mount with FSX_LATENCY per
# operation (a shared file system such as FSx for ONTAP), and on wal-object in MinIO (batchMs=OBJECT_BATCH_MS).
#   benchmarks/compare/shell-wal.sh       # RATE=2000 RATE_SECONDS=20 FSX_LATENCY=1ms OBJECT_BATCH_MS=10 ROUNDS=2
. "$(dirname "$0")/lib.sh"
RATE="${RATE:-2000}"
RATE_SECONDS="${RATE_SECONDS:-20}"
FSX_LATENCY="${FSX_LATENCY:-1ms}"
OBJECT_BATCH_MS="${OBJECT_BATCH_MS:-10}"
ROUNDS="${ROUNDS:-2}"
setup_kafka_tools
build_shell
LATENCYFS="${S3STREAM_LATENCYFS_BIN:-/opt/s3stream-tools/bin/latencyfs}"
if [ ! -x "$LATENCYFS" ]; then
  LATENCYFS="$WORK/latencyfs"
  (cd "$ROOT/test-infra/latencyfs" && go build -o "$LATENCYFS" .)
fi
mkdir -p "$RUN"
: >"$RUN/perf.log"
machine | tee "$RUN/machine.txt" >&2
TSV="$RUN/shell-wal.tsv"
printf 'round\twal\tload\trec_s\tmb_s\tavg_ms\tp50_ms\tp99_ms\tp999_ms\n' >"$TSV"
start_minio "$WORK/minio-shell"
BACKING="$WORK/fsx-backing"; MNT="$WORK/fsx-mnt"
rm -rf "$BACKING"; mkdir -p "$BACKING" "$MNT"
"$LATENCYFS" -backing "$BACKING" -mount "$MNT" -latency "$FSX_LATENCY" -meta-latency "$FSX_LATENCY" \
  >"$RUN/latencyfs.log" 2>&1 &
FS_PID=$!; PIDS+=("$FS_PID")
for _ in $(seq 100); do grep -q READY "$RUN/latencyfs.log" && break; sleep 0.1; done

for ((round = 1; round <= ROUNDS; round++)); do
  for wal in blockdev fsx objectwal; do
    case "$wal" in
      blockdev) extra=() ;;
      fsx) rm -rf "$MNT/wal-$round"; mkdir -p "$MNT/wal-$round"
           extra=(--override "s3stream.wal=fsx://$MNT/wal-$round?capacity=512MiB&segmentBytes=128MiB") ;;
      objectwal) extra=(--override "s3stream.wal=objectwal://?batchMs=$OBJECT_BATCH_MS&batchBytes=8MiB"
                        --override "s3stream.object.store=${S3_URI/s3stream/shell-$round}") ;;
    esac
    start_shell "$RUN/shell-$wal" "${extra[@]}"
    topic="w-$wal-$round"
    create_topic "127.0.0.1:$SHELL_PORT" "$topic"
    quiet; load="$LOAD"
    v="$(produce "127.0.0.1:$SHELL_PORT" "$topic" $((RATE * RATE_SECONDS)) "$RATE" $((RATE * 5)))"
    printf '%s\t%s\t%s\t%s\n' "$round" "$wal" "$load" "$(tr ' ' '\t' <<<"$v")" >>"$TSV"
    log "round $round $wal (load $load): $v"
    stop_pid "$SHELL_PID"
  done
done
python3 - "$TSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print(f'{"wal":10} {"rounds":>6} {"load":>6} {"rec/s":>8} {"p50 ms":>8} {"p99 ms":>8} {"p99.9 ms":>9}')
for wal in dict.fromkeys(r["wal"] for r in rows):
    rs = [r for r in rows if r["wal"] == wal]
    med = lambda k: statistics.median(float(r[k]) for r in rs)
    print(f'{wal:10} {len(rs):>6} {max(float(r["load"]) for r in rs):>6.2f} {med("rec_s"):>8.0f} {med("p50_ms"):>8.1f} '
          f'{med("p99_ms"):>8.1f} {med("p999_ms"):>9.1f}')
PY
plot "$TSV" "$RUN/shell-wal.svg" "kafka-shell at a fixed rate of 1 KiB records on three WALs"
