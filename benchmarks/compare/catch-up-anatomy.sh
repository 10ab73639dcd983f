#!/usr/bin/env bash
# Where a catch-up's cost to the producer goes, inside kafka-shell alone (no Kafka beside it): catch-up.sh's
# procedure (a producer at a fixed rate, 1 KiB acks=all linger.ms=5, alone and then while ConsumerPerformance passes
# read a backlog from objects), and for each run, besides the producer's percentiles, what the shell saw of it:
#   - its own produce latency, dispatch to response (the kafka_request_latency histogram of metrics.port; bucket
#     bounds, so "<= 5.6 ms" means between the bucket below and 5.6 ms);
#   - its garbage-collection pauses in the run (from -Xlog:gc): count, total and longest, and the heap after the last;
#   - the threads that waited longest for a core (run-queue delay from /proc/<pid>/task/*/schedstat), with their CPU;
#   - the machine's CPU pressure: the share of the run in which some runnable task waited (/proc/pressure/cpu).
#   STORE=minio benchmarks/compare/catch-up-anatomy.sh     # ROUNDS=2 BACKLOG_RECORDS=500000 RATE=2000 SECONDS_PER_RUN=20
# STORE=file (default) reads the backlog from file:// objects; SHELL_ARGS and KAFKA_SHELL_JAVA_OPTS reach the shell.
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-2}"
BACKLOG_RECORDS="${BACKLOG_RECORDS:-500000}"
RATE="${RATE:-2000}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-20}"
STORE="${STORE:-file}"
METRICS_PORT="${METRICS_PORT:-29400}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
: >"$RUN/perf.log"
machine | tee "$RUN/machine.txt" >&2
shell_args=(--override s3stream.log.cache.bytes=33554432 --override s3stream.upload.threshold.bytes=8388608
  --override "metrics.port=$METRICS_PORT")
if [ "$STORE" = minio ]; then
  start_minio "$RUN/minio"
  shell_args+=(--override "s3stream.object.store=$S3_URI")
fi
# shellcheck disable=SC2206 # SHELL_ARGS is meant to split
shell_args+=(${SHELL_ARGS:-})
GC_LOG="$RUN/gc.log"
KAFKA_SHELL_JAVA_OPTS="${KAFKA_SHELL_JAVA_OPTS:-} -Xlog:gc:file=$GC_LOG:timemillis" start_shell "$RUN/shell" "${shell_args[@]}"
bs="127.0.0.1:$SHELL_PORT"
create_topic "$bs" backlog
log "writing the backlog ($BACKLOG_RECORDS x 1 KiB)"
produce "$bs" backlog "$BACKLOG_RECORDS" -1 0 >/dev/null
sleep 15 # let the shell upload the tail of the backlog

# snapshot name: the produce latency histogram, the threads' scheduler counters, the time (ms since the epoch, as the
# GC log's timemillis decoration)
snapshot() {
  curl -fs "http://127.0.0.1:$METRICS_PORT/metrics" | grep 'kafka_request_latency_seconds_bucket{api="Produce"' \
    >"$RUN/$1.hist" || true
  local t
  for t in /proc/"$SHELL_PID"/task/*; do
    printf '%s\t%s\n' "$(cat "$t/comm" 2>/dev/null)" "$(cat "$t/schedstat" 2>/dev/null)"
  done >"$RUN/$1.sched"
  date +%s%3N >"$RUN/$1.time"
  # the machine's CPU pressure (PSI): microseconds in which some runnable task waited for a core
  sed -n 's/^some .*total=//p' /proc/pressure/cpu >"$RUN/$1.psi" 2>/dev/null || true
}
report() { # phase round
  python3 "$COMPARE/catch_up_anatomy.py" "$RUN" "$1-$2" "$GC_LOG" | while IFS= read -r line; do log "  $line"; done
}

n=$((RATE * SECONDS_PER_RUN))
for ((round = 1; round <= ROUNDS; round++)); do
  sleep 3
  quiet
  create_topic "$bs" "live-before-$round"
  snapshot "before-$round.0"
  r="$(produce "$bs" "live-before-$round" "$n" "$RATE" $((RATE * 3)))"
  snapshot "before-$round.1"
  log "round $round before (load $LOAD): producer rec/s MB/s avg p50 p99 p99.9: $r"
  report before "$round"

  sleep 3
  quiet
  create_topic "$bs" "live-during-$round"
  passes="$RUN/passes-$round"
  start_passes "$bs" backlog "$BACKLOG_RECORDS" "$passes"
  sleep 2 # the first pass is past its group join and reading
  snapshot "during-$round.0"
  r="$(produce "$bs" "live-during-$round" "$n" "$RATE" $((RATE * 3)))"
  snapshot "during-$round.1"
  stop_passes "$passes"
  log "round $round during (load $LOAD): producer rec/s MB/s avg p50 p99 p99.9: $r; catch-up passes MB/s:" \
    "$(awk '{ printf "%s ", $1 }' "$passes")"
  report during "$round"
done
cleanup
