#!/usr/bin/env bash
# Rounds on one shell: starts bin/kafka-shell once (the embedded default unless SHELL_ARGS says otherwise) and runs
# ROUNDS consecutive ProducerPerformance rounds at RATE rec/s (RECORDS each, 1 KiB, acks=all linger.ms=5
# batch.size=131072, a fresh 1-partition topic per round), printing each round's steady-state percentiles. Unlike
# produce-consume.sh, which restarts nothing between tests but mixes systems, this keeps the background work of one
# process in view: with the defaults a compaction round runs every 60 s, so rounds 3 and 6 of 20 s each meet one.
#   benchmarks/compare/shell-rounds.sh                 # ROUNDS=6 RATE=10000 RECORDS=200000
#   SHELL_ARGS="--override s3stream.compaction.interval.ms=3600000" benchmarks/compare/shell-rounds.sh
#   SHELL_JAVA_OPTS="-XX:StartFlightRecording=name=rounds,settings=profile" benchmarks/compare/shell-rounds.sh
#     (the recording is dumped to .work/run/shell-rounds/rounds.jfr before the shell stops)
#   PRELOAD=200000 RATE=2000 RECORDS=46000 benchmarks/compare/shell-rounds.sh
#     (first produces PRELOAD records unthrottled into a 1-partition and a 16-partition topic, as produce-consume.sh's
#     unthrottled tests do before its rate tests, so the rounds meet the uploads and compactions that follow)
# perf.log (under .work/run) holds ProducerPerformance's 5-s windows with the UTC time each was printed.
# Output per round: records/s MB/s avg_ms p50_ms p99_ms p99.9_ms, with the 1-minute load.
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-6}"
RATE="${RATE:-10000}"
RECORDS="${RECORDS:-200000}"

setup_kafka_tools
build_shell
DIR="$RUN"
mkdir -p "$DIR"
: >"$RUN/perf.log"
machine | tee "$DIR/machine.txt" >&2
quiet
# shellcheck disable=SC2086 # SHELL_ARGS is meant to split
KAFKA_SHELL_JAVA_OPTS="${SHELL_JAVA_OPTS:-}" start_shell "$DIR/shell" ${SHELL_ARGS:-}
if ((${PRELOAD:-0} > 0)); then
  for partitions in 1 16; do
    topic="preload-$partitions-$(date +%s)"
    PARTITIONS=$partitions create_topic "127.0.0.1:$SHELL_PORT" "$topic"
    log "preload $partitions partition(s): $(produce "127.0.0.1:$SHELL_PORT" "$topic" "$PRELOAD" -1 $((PRELOAD / 5)))"
  done
fi
for ((r = 1; r <= ROUNDS; r++)); do
  topic="rounds-$r-$(date +%s)"
  create_topic "127.0.0.1:$SHELL_PORT" "$topic"
  result="$(produce "127.0.0.1:$SHELL_PORT" "$topic" "$RECORDS" "$RATE" $((RECORDS / 10)))"
  log "round $r at $RATE rec/s (load $(cut -d' ' -f1 /proc/loadavg)): $result"
done
if [[ "${SHELL_JAVA_OPTS:-}" == *StartFlightRecording* ]]; then
  "$JAVA_HOME/bin/jcmd" "$SHELL_PID" JFR.dump name=rounds filename="$DIR/rounds.jfr" >/dev/null && log "JFR: $DIR/rounds.jfr"
fi
stop_pid "$SHELL_PID"
