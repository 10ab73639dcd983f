#!/usr/bin/env bash
# Soak: one kafka-shell (embedded default: WAL file + file:// objects) under mixed load for MINUTES
# (io.s3stream.benchmarks.Soak: an idempotent producer at 2,000 rec/s into 8 partitions with 10-minute retention,
# catch-up reads of everything every 3 minutes, a consumer group whose members leave and rejoin, a topic created,
# written, read and deleted every 15 s, a compacted topic rewritten continuously), sampling the shell's RSS, threads,
# open files, cache memory and manifest size every 10 s. Checks on the way and at the end that nothing acknowledged
# was lost or duplicated, committed offsets never went back, compacted keys read their last value and the process
# stayed flat after warm-up; then stops the shell (SIGTERM) and runs the leak checker on its bucket.
#   benchmarks/compare/soak.sh                 # MINUTES=60
# Output: $RUN/samples.tsv, $RUN/soak.svg (with matplotlib), the verdict on stdout; exit status 1 on any failure.
. "$(dirname "$0")/lib.sh"
MINUTES="${MINUTES:-60}"
METRICS_PORT="${METRICS_PORT:-29093}"
build_shell
mkdir -p "$RUN"
machine | tee "$RUN/machine.txt" >&2
quiet
log "load before the run: $LOAD"
start_shell "$RUN/shell" --override metrics.port="$METRICS_PORT" --override log.retention.check.interval.ms=60000
status=0
"$JAVA" -Xmx1g -cp "$ROOT/benchmarks/target/benchmarks.jar" io.s3stream.benchmarks.Soak "127.0.0.1:$SHELL_PORT" \
  "$SHELL_PID" "$MINUTES" "$RUN/samples.tsv" "$RUN/shell/objects" "http://127.0.0.1:$METRICS_PORT/metrics" \
  2>"$RUN/soak.log" | tee "$RUN/verdict.txt" || status=1
log "stopping the shell"
stop_pid "$SHELL_PID"
log "leak check of $RUN/shell/objects"
"$JAVA" -cp "$ROOT/benchmarks/target/benchmarks.jar" io.s3stream.internal.tool.LeakCheckTool \
  "file://$RUN/shell/objects" | tee -a "$RUN/verdict.txt" || status=1
plot "$RUN/samples.tsv" "$RUN/soak.svg" "kafka-shell soak, $MINUTES min, $(date -u +%Y-%m-%d)"
[ "$status" -eq 0 ] && log "soak passed" || log "soak FAILED (see $RUN/verdict.txt and $RUN/soak.log)"
exit "$status"
