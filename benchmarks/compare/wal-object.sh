#!/usr/bin/env bash
# wal-object against MinIO through a delaying TCP proxy (DelayProxy: this kernel has no tc netem), next to
# wal-blockdev on the local disk: open-loop append latency at RATE appends/s of 4 KiB for batchMs 10/50/250 at RTTs
# of 0/10/30 ms, and throughput (64 KiB appends, WINDOW in flight); then object-store requests and bytes per GiB ingested
# through the engine (ObjectWalCost, manifest requests included) at upload thresholds of UPLOADS.
#   benchmarks/compare/wal-object.sh            # RTTS="0 10 30" BATCHES="10 50 250" RATE=1000 SECONDS_PER_RUN=10 WINDOW=512
#                                               # COST_GIB=2 UPLOADS="32MiB 256MiB 512MiB"
. "$(dirname "$0")/lib.sh"
RTTS="${RTTS:-0 10 30}"
BATCHES="${BATCHES:-10 50 250}"
RATE="${RATE:-1000}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}"
COST_GIB="${COST_GIB:-2}"
UPLOADS="${UPLOADS-32MiB 256MiB 512MiB}"
WINDOW="${WINDOW:-512}"
build_shell
mkdir -p "$RUN"
machine | tee "$RUN/machine.txt" >&2
OUT="$RUN/results.tsv"
printf 'target\trtt_ms\tjob\tload\tresult\n' >"$OUT"
CP="$ROOT/benchmarks/target/benchmarks.jar"
J=("$JAVA" --enable-native-access=ALL-UNNAMED -Xmx2g -XX:MaxDirectMemorySize=2g -cp "$CP")

record() { # target rtt job line
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$LOAD" "${4% description=*}" >>"$OUT"
  log "$1 rtt=$2 $3 (load $LOAD): ${4% description=*}"
}

LOCAL="$WORK/disk-wal"; rm -rf "$LOCAL"; mkdir -p "$LOCAL"
quiet; record blockdev - "4k-$RATE/s" "$("${J[@]}" io.s3stream.benchmarks.WalLatency \
  wal="blockdev://$LOCAL/wal.img?capacity=1GiB" rate="$RATE" bytes=4096 warmup=3 seconds="$SECONDS_PER_RUN" 2>>"$RUN/java.log" | tail -1)"
rm -rf "$LOCAL"

start_minio "$WORK/minio"
for rtt in $RTTS; do
  "${J[@]}" io.s3stream.benchmarks.DelayProxy 0 "127.0.0.1:$MINIO_PORT" "$rtt" >"$RUN/proxy-$rtt.log" 2>&1 &
  PROXY_PID=$!; PIDS+=("$PROXY_PID")
  for _ in $(seq 100); do grep -q READY "$RUN/proxy-$rtt.log" && break; sleep 0.1; done
  port="$(sed -n 's/READY port=//p' "$RUN/proxy-$rtt.log")"
  store() { echo "s3://bench/wal-$rtt-$1-$RANDOM?endpoint=http://127.0.0.1:$port&region=us-east-1&pathStyle=true&accessKey=minioadmin&secretKey=minioadmin"; }
  for batch in $BATCHES; do
    quiet; record objectwal "$rtt" "batchMs=$batch 4k-$RATE/s" "$("${J[@]}" io.s3stream.benchmarks.WalLatency \
      wal="objectwal://?batchMs=$batch&batchBytes=8MiB" store="$(store "$batch")" rate="$RATE" bytes=4096 warmup=3 \
      seconds="$SECONDS_PER_RUN" 2>>"$RUN/java.log" | tail -1)"
  done
  quiet; record objectwal "$rtt" "batchMs=50 64k-window$WINDOW" "$("${J[@]}" io.s3stream.benchmarks.WalLatency \
    wal="objectwal://?batchMs=50&batchBytes=8MiB" store="$(store tp)" mode=throughput bytes=65536 window="$WINDOW" warmup=3 \
    seconds="$SECONDS_PER_RUN" 2>>"$RUN/java.log" | tail -1)"
  kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
done
for upload in $UPLOADS; do
  quiet; record objectwal-cost 0 "upload=$upload" "$("${J[@]}" io.s3stream.benchmarks.ObjectWalCost \
    store="s3://bench/cost-$upload?endpoint=http://127.0.0.1:$MINIO_PORT&region=us-east-1&pathStyle=true&accessKey=minioadmin&secretKey=minioadmin" \
    gib="$COST_GIB" batchBytes=8MiB upload="$upload" streams=16 batch=64KiB 2>>"$RUN/java.log" | tail -1)"
done
column -t -s $'\t' "$OUT"
