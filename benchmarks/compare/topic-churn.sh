#!/usr/bin/env bash
# What a kafka-shell keeps after topics come and go: one shell on its embedded default (wal-blockdev file + file://
# objects), ROUNDS rounds of PER_ROUND topics of PARTITIONS partitions each created, written (one record per
# partition) and deleted by io.s3stream.benchmarks.TopicChurn; then the shell's live heap by class for the manifest's
# stream entries (jcmd GC.class_histogram, after a full GC) and the size of its newest manifest checkpoint.
#   benchmarks/compare/topic-churn.sh                  # ROUNDS=20 PER_ROUND=50 PARTITIONS=4: 4,000 streams
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-20}"
PER_ROUND="${PER_ROUND:-50}"
PARTITIONS="${PARTITIONS:-4}"
build_shell
mkdir -p "$RUN"
machine | tee "$RUN/machine.txt" >&2
quiet
dir="$RUN/shell"
start_shell "$dir"
"$JAVA" -cp "$ROOT/benchmarks/target/benchmarks.jar" io.s3stream.benchmarks.TopicChurn "127.0.0.1:$SHELL_PORT" \
  "$ROUNDS" "$PER_ROUND" "$PARTITIONS" 2>"$RUN/churn.log"
"$JAVA_HOME/bin/jcmd" "$SHELL_PID" GC.class_histogram >"$RUN/histogram.txt"
entries="$(awk '$4 == "io.s3stream.internal.metadata.StreamEntry" { print $2, $3 }' "$RUN/histogram.txt")"
live="$(awk '$1 == "Total" { print $3 }' "$RUN/histogram.txt")"
stop_pid "$SHELL_PID"
checkpoint="$(find "$dir/objects/manifest/checkpoint" -type f -printf '%f %s\n' 2>/dev/null | sort | tail -n 1)"
printf "load %s; streams created and deleted: %d\n" "$LOAD" "$((ROUNDS * PER_ROUND * PARTITIONS))"
printf 'manifest stream entries on the heap (count bytes): %s\n' "${entries:-0 0}"
printf 'live heap after a full GC: %s bytes\n' "$live"
printf 'newest manifest checkpoint (entry bytes): %s\n' "${checkpoint:-none}"
