#!/usr/bin/env bash
# Transactional produce: kafka-shell vs Apache Kafka 4.3.1 on this machine, the same harness
# (io.s3stream.benchmarks.TransactionalProducePerf: one producer, transactions of PER_TXN records of 1 KiB, acks=all,
# linger.ms=5, batch.size=131072, each commit awaited before the next transaction begins), 1 partition, loopback.
#   benchmarks/compare/transactions.sh              # ROUNDS=3 TRANSACTIONS=2000 PER_TXN=100
# Systems: kafka (default flushing: page cache only), kafka-flush1 (topic flush.messages=1: fsync per batch), shell
# (kafka-shell's embedded default: wal-blockdev on a preallocated file, O_DIRECT|O_DSYNC, file:// objects).
# Rounds alternate the order of systems; the table reports medians over rounds and ratios shell/kafka of the medians.
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
TRANSACTIONS="${TRANSACTIONS:-2000}"
PER_TXN="${PER_TXN:-100}"
SETTLE="${SETTLE:-5}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
TSV="$RUN/transactions.tsv"
printf 'round\tsystem\tload\ttxn_s\trec_s\tmb_s\trec_p50_ms\trec_p99_ms\tcommit_p50_ms\tcommit_p99_ms\ttxn_p50_ms\ttxn_p99_ms\n' >"$TSV"
machine | tee "$RUN/machine.txt" >&2

start_kafka "$RUN/kafka"
start_shell "$RUN/shell"

bootstrap() { case "$1" in shell) echo "127.0.0.1:$SHELL_PORT" ;; *) echo "127.0.0.1:$KAFKA_PORT" ;; esac; }
SYSTEMS=(kafka kafka-flush1 shell)
for ((round = 1; round <= ROUNDS; round++)); do
  order=()
  for ((i = 0; i < ${#SYSTEMS[@]}; i++)); do order+=("${SYSTEMS[$(((i + round - 1) % ${#SYSTEMS[@]}))]}"); done
  for sys in "${order[@]}"; do
    sleep "$SETTLE"
    quiet; load="$LOAD"
    bs="$(bootstrap "$sys")"
    t="txn-$sys-r$round"
    if [ "$sys" = kafka-flush1 ]; then create_topic "$bs" "$t" flush.messages=1; else create_topic "$bs" "$t"; fi
    r="$("$JAVA" -Xmx512m -cp "$ROOT/benchmarks/target/benchmarks.jar" io.s3stream.benchmarks.TransactionalProducePerf \
      "$bs" "$t" "$TRANSACTIONS" "$PER_TXN" 1024 "perf-$sys-$round" 2>>"$RUN/perf.log" | tail -1)"
    printf '%s\t%s\t%s\t%s\n' "$round" "$sys" "$load" "$(echo "$r" | tr ' ' '\t')" >>"$TSV"
    log "round $round $sys (load $load): $r"
  done
done
cleanup
python3 "$COMPARE/summarize.py" transactions "$TSV"
