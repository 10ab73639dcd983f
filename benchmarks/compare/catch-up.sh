#!/usr/bin/env bash
# Catch-up read isolation: a producer at a fixed rate (1 KiB, acks=all, linger.ms=5, batch.size=131072) while
# consumers read a backlog from the beginning, for kafka-shell (backlog in objects: a 32 MiB log cache, so the backlog
# is not in memory) and Apache Kafka 4.3.1 (backlog in its log segments, i.e. in the page cache on this 24 GiB
# machine). Per round and system: the producer's p50/p99/p99.9 alone ("before"), then the same producer run while
# ConsumerPerformance passes read the whole backlog back to back ("during"); catch-up MB/s is the median of the passes.
#   benchmarks/compare/catch-up.sh          # ROUNDS=3 BACKLOG_RECORDS=1000000 RATE=2000 SECONDS_PER_RUN=30
# STORE=minio runs kafka-shell on MinIO (s3://) instead of its file:// default, when the s3 object store exists.
# A third system, noop, is the yardstick: the producer writes to the no-op broker (benchmarks' NoOpBroker, which stores
# nothing) while the consumers read kafka-shell's backlog, so "during" carries the whole catch-up (consumer, shell
# read path, the object store) on the same two cores but none of it inside the broker the producer writes to. The
# shell's rise minus this one is what its read path costs its own write path; this one alone is what sharing the
# cores with the catch-up costs any producer here. SYSTEMS picks a subset (default "kafka shell noop").
# SHELL_ARGS: extra bin/kafka-shell arguments, e.g. a catch-up bandwidth cap:
#   STORE=minio SHELL_ARGS="--override s3stream.catch.up.bytes.per.second=33554432" benchmarks/compare/catch-up.sh
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
BACKLOG_RECORDS="${BACKLOG_RECORDS:-1000000}"
RATE="${RATE:-2000}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-30}"
STORE="${STORE:-file}"
read -ra SYSTEMS <<<"${SYSTEMS:-kafka shell noop}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
: >"$RUN/perf.log"
TSV="$RUN/catch-up.tsv"
printf 'round\tsystem\tphase\tload\tsteal_s\trec_s\tmb_s\tavg_ms\tp50_ms\tp99_ms\tp999_ms\tcatchup_mb_s\n' >"$TSV"
machine | tee "$RUN/machine.txt" >&2

shell_args=(--override s3stream.log.cache.bytes=33554432 --override s3stream.upload.threshold.bytes=8388608)
if [ "$STORE" = minio ]; then
  start_minio "$RUN/minio"
  shell_args+=(--override "s3stream.object.store=$S3_URI")
fi
# shellcheck disable=SC2206 # SHELL_ARGS is meant to split
shell_args+=(${SHELL_ARGS:-})
start_kafka "$RUN/kafka"
start_shell "$RUN/shell" "${shell_args[@]}"
log "kafka-shell object store: $STORE"
case " ${SYSTEMS[*]} " in *" noop "*) start_noop ;; esac

bootstrap() { # where the producer writes
  case "$1" in shell) echo "127.0.0.1:$SHELL_PORT" ;; noop) echo "127.0.0.1:$NOOP_PORT" ;; *) echo "127.0.0.1:$KAFKA_PORT" ;; esac
}
backlog_of() { case "$1" in kafka) echo kafka ;; *) echo shell ;; esac; } # whose backlog the consumers read
for sys in kafka shell; do
  create_topic "$(bootstrap "$sys")" backlog
  log "$sys: writing the backlog ($BACKLOG_RECORDS x 1 KiB)"
  produce "$(bootstrap "$sys")" backlog "$BACKLOG_RECORDS" -1 0 >/dev/null
done
sleep 15 # let kafka-shell upload the tail of the backlog (upload interval 10 s)

n=$((RATE * SECONDS_PER_RUN))
for ((round = 1; round <= ROUNDS; round++)); do
  order=()
  for ((i = 0; i < ${#SYSTEMS[@]}; i++)); do order+=("${SYSTEMS[$(((i + round - 1) % ${#SYSTEMS[@]}))]}"); done
  for sys in "${order[@]}"; do
    bs="$(bootstrap "$sys")"
    sleep 3
    quiet; load="$LOAD"
    create_topic "$bs" "live-before-$round"
    steal0="$(steal_ticks)"
    r="$(produce "$bs" "live-before-$round" "$n" "$RATE" $((RATE * 3)))"
    steal="$(steal_since "$steal0")"
    printf '%s\t%s\tbefore\t%s\t%s\t%s\t-\n' "$round" "$sys" "$load" "$steal" "$(echo "$r" | tr ' ' '\t')" >>"$TSV"
    log "round $round $sys before (load $load, $steal s stolen): $r"

    sleep 3
    quiet; load="$LOAD"
    create_topic "$bs" "live-during-$round"
    passes="$RUN/passes-$sys-$round"
    start_passes "$(bootstrap "$(backlog_of "$sys")")" backlog "$BACKLOG_RECORDS" "$passes"
    sleep 2 # the first pass is past its group join and reading
    steal0="$(steal_ticks)"
    r="$(produce "$bs" "live-during-$round" "$n" "$RATE" $((RATE * 3)))"
    steal="$(steal_since "$steal0")"
    stop_passes "$passes"
    cu="$(awk '{ print $1 }' "$passes" | sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }')"
    printf '%s\t%s\tduring\t%s\t%s\t%s\t%s\n' "$round" "$sys" "$load" "$steal" "$(echo "$r" | tr ' ' '\t')" "$cu" >>"$TSV"
    log "round $round $sys during (load $load, $steal s stolen): $r; catch-up passes MB/s: $(tr '\n' ' ' <"$passes")"
  done
done
cleanup
python3 "$COMPARE/summarize.py" catch-up "$TSV"
