#!/usr/bin/env bash
# Produce/consume: kafka-shell vs Apache Kafka 4.3.1 on this machine, same ProducerPerformance/ConsumerPerformance
# commands (1 KiB records, acks=all, linger.ms=5, batch.size=131072), client and broker on loopback.
#   benchmarks/compare/produce-consume.sh            # ROUNDS=3 RECORDS=200000 RATE_SECONDS=20
# Systems: kafka (default flushing: page cache only), kafka-flush1 (topic flush.messages=1: fsync per batch),
# shell (kafka-shell's embedded default: wal-blockdev on a preallocated file, O_DIRECT|O_DSYNC, file:// objects),
# noop (benchmarks' NoOpBroker: answers every produce at once and stores nothing; the yardstick: on two cores shared
# with the producer, the most throughput and the least latency any broker can give that producer here; it has
# nothing to consume). SYSTEMS picks a subset (default all four).
# Tests (TESTS, default all, in this order): unthrottled (throughput, 1 partition), unthrottled16 (the same into a
# 16-partition topic), rate2000 and rate10000 (latency at a fixed rate, 1 partition), consume (ConsumerPerformance of
# the unthrottled topic; needs unthrottled in the same run).
# Each round runs every (test, system) once, the order of systems rotating per round (A/B/C, B/C/A, ...); the table
# reports medians over rounds and ratios shell/kafka of those medians. Raw rows go to .work/run/produce-consume.tsv,
# each with the run's load, the CPU seconds the hypervisor stole during it (steal_s, lib.sh's steal_ticks), the
# records the run sent or read, and the CPU seconds the broker process and the whole machine used meanwhile
# (broker_cpu_s, machine_cpu_s; the table prints both per million records: on two cores shared with the client, a
# broker's CPU per record is what it takes from the producer's throughput). lib.sh's quiet() waits for a low load and
# little steal before each run, but the host can take a core in the middle of one: a run during which it stole more
# than MAX_RUN_STEAL_PCT percent of the machine's CPU (default 5) is written to .work/run/produce-consume/discarded.tsv
# instead and run again on a fresh topic, up to STEAL_RETRIES times (default 2; the last attempt is kept whatever its
# steal).
# Before each rate test, after more than 1.5 GB written to the disk since the last such wait, the script waits until
# the disk has been idle for 90 s (lib.sh's quiesce: every broker done compacting or flushing the unthrottled tests'
# data; QUIESCE=0 turns it off, QUIESCE_IDLE_S/QUIESCE_AFTER_MB/QUIESCE_MAX_S tune it).
# WARMUP_RUNS (default 3) unthrottled runs of WARMUP_RECORDS (default 1,000,000) into every system before the first
# round, not reported (every other one into 16 partitions when unthrottled16 is a test), and one read of the first when
# consume is: a fresh broker's CPU per record falls 2-5x over its first few million records as the JIT compiles (Kafka's
# one-partition CPU per million records went 9.1 -> 3.4 -> 1.8 s over three such runs, benchmarks/README.md, "at
# e32da9b: a warm Kafka"), so without them the early rounds compare JIT warm-ups, not brokers. Kafka's 16-partition
# path takes longer still (at its best only in round 3 after the default warm-up), and a Kafka holding most of the
# page cache slows down again ("every broker warmed first": 1.7 -> 3.1 s per million records after WARMUP_RUNS=9):
# compare runs at the same WARMUP_RUNS. WARMUP_RUNS=0: cold.
# SHELL_ARGS: extra bin/kafka-shell arguments, e.g. SHELL_ARGS="--override s3stream.object.store=file:///dev/shm/o"
# (objects off the WAL's disk). The shell starts with an AOT cache trained just before (lib.sh's train_aot: as
# deployed after bin/kafka-shell --train-aot); SHELL_AOT=0 runs it without one. Kafka runs as shipped (no AOT cache).
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
RECORDS="${RECORDS:-200000}"
RATE_SECONDS="${RATE_SECONDS:-20}"
WARMUP_RUNS="${WARMUP_RUNS:-3}"
WARMUP_RECORDS="${WARMUP_RECORDS:-1000000}"
SETTLE="${SETTLE:-5}"
TESTS="${TESTS:-unthrottled unthrottled16 rate2000 rate10000 consume}"
read -ra SYSTEMS <<<"${SYSTEMS:-kafka kafka-flush1 shell noop}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
: >"$RUN/perf.log"
TSV="$RUN/produce-consume.tsv"
HEADER='round\tsystem\ttest\tload\tsteal_s\trec_s\tmb_s\tavg_ms\tp50_ms\tp99_ms\tp999_ms\trecords\tbroker_cpu_s\tmachine_cpu_s'
printf "$HEADER\\n" >"$TSV"
printf "$HEADER\\tsteal_pct\\n" >"$RUN/discarded.tsv"
machine | tee "$RUN/machine.txt" >&2

case " ${SYSTEMS[*]} " in *" kafka "* | *" kafka-flush1 "*) start_kafka "$RUN/kafka" ;; esac
# shellcheck disable=SC2086 # SHELL_ARGS is meant to split
case " ${SYSTEMS[*]} " in *" shell "*) start_shell "$RUN/shell" ${SHELL_ARGS:-} ;; esac
case " ${SYSTEMS[*]} " in *" noop "*) start_noop ;; esac

bootstrap() {
  case "$1" in shell) echo "127.0.0.1:$SHELL_PORT" ;; noop) echo "127.0.0.1:$NOOP_PORT" ;; *) echo "127.0.0.1:$KAFKA_PORT" ;; esac
}
broker_pid() {
  case "$1" in shell) echo "$SHELL_PID" ;; noop) echo "$NOOP_PID" ;; *) echo "$KAFKA_PID" ;; esac
}
topic_for() { # system test round -> a fresh topic, created with the system's settings
  local t="pc-$2-$1-r$3" bs partitions=1 cfg=(); bs="$(bootstrap "$1")"
  [ "$2" = unthrottled16 ] && partitions=16
  [ "$1" = kafka-flush1 ] && cfg=(flush.messages=1)
  PARTITIONS=$partitions create_topic "$bs" "$t" "${cfg[@]}"
  echo "$t"
}

for ((w = 1; w <= WARMUP_RUNS; w++)); do
  test=unthrottled
  [[ $((w % 2)) = 0 && " $TESTS " == *" unthrottled16 "* ]] && test=unthrottled16
  for sys in "${SYSTEMS[@]}"; do
    t="$(topic_for "$sys" "$test" "warmup$w")"
    log "$sys: warm-up run $w of $WARMUP_RUNS, $test (not reported): $(produce "$(bootstrap "$sys")" "$t" \
      "$WARMUP_RECORDS" -1 $((WARMUP_RECORDS / 5)))"
  done
done
if ((WARMUP_RUNS > 0)) && [[ " $TESTS " == *" consume "* ]]; then
  for sys in "${SYSTEMS[@]}"; do
    [ "$sys" = noop ] && continue
    log "$sys: warm-up read (not reported): $(consume "$(bootstrap "$sys")" "pc-unthrottled-$sys-rwarmup1" "$WARMUP_RECORDS")"
  done
fi

quiesce_mark
for ((round = 1; round <= ROUNDS; round++)); do
  order=()
  for ((i = 0; i < ${#SYSTEMS[@]}; i++)); do order+=("${SYSTEMS[$(((i + round - 1) % ${#SYSTEMS[@]}))]}"); done
  declare -A unthrottled_topic=()
  for test in $TESTS; do
    for sys in "${order[@]}"; do
      [ "$test" = consume ] && [ "$sys" = noop ] && continue # it kept nothing to read
      # A run the host stole from is written to discarded.tsv and run again on its own topic (lib.sh's run_stolen).
      for ((attempt = 1; ; attempt++)); do
        sleep "$SETTLE"
        case "$test" in rate*) quiesce ;; esac # the tail at a rate, not the compaction of what came before
        quiet; load="$LOAD"; mark="$(steal_mark)"
        tr="$round"; ((attempt == 1)) || tr="$round-a$attempt"
        bs="$(bootstrap "$sys")"
        cpu0="$(cpu_ticks "$(broker_pid "$sys")")"; busy0="$(machine_busy_ticks)"
        case "$test" in
          unthrottled | unthrottled16)
            t="$(topic_for "$sys" "$test" "$tr")"
            [ "$test" = unthrottled ] && unthrottled_topic[$sys]="$t"
            records="$RECORDS"
            r="$(produce "$bs" "$t" "$RECORDS" -1 $((RECORDS / 5)))" ;;
          rate2000)
            t="$(topic_for "$sys" "$test" "$tr")"
            records=$((2000 * RATE_SECONDS))
            r="$(produce "$bs" "$t" "$records" 2000 $((2000 * 3)))" ;;
          rate10000)
            t="$(topic_for "$sys" "$test" "$tr")"
            records=$((10000 * RATE_SECONDS))
            r="$(produce "$bs" "$t" "$records" 10000 $((10000 * 3)))" ;;
          consume)
            records="$RECORDS"
            c="$(consume "$bs" "${unthrottled_topic[$sys]}" "$RECORDS")"
            set -- $c
            r="$2 $1 - - - -" ;;
        esac
        steal="$(steal_since "${mark%% *}")" # the mark's first field is steal_ticks' reading
        # The broker's CPU and the whole machine's over the client's run (its JVM start included; Kafka's page-cache
        # writeback runs in kernel threads and counts in the machine's figure, not in Kafka's).
        cpu="$(ticks_s "$cpu0" "$(cpu_ticks "$(broker_pid "$sys")")")"; busy="$(ticks_s "$busy0" "$(machine_busy_ticks)")"
        row="$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$round" "$sys" "$test" "$load" "$steal" \
          "$(echo "$r" | tr ' ' '\t')" "$records" "$cpu" "$busy")"
        if run_stolen "$mark" "$attempt"; then
          printf '%s\t%s\n' "$row" "$STOLEN_PCT" >>"$RUN/discarded.tsv"
          log "round $round $test $sys: the host stole $steal s ($STOLEN_PCT % of the CPU) during the run: discarded, again"
          continue
        fi
        printf '%s\n' "$row" >>"$TSV"
        log "round $round $test $sys (load $load, $steal s stolen, broker $cpu s CPU of the machine's $busy s): $r"
        break
      done
    done
  done
done
cleanup
python3 "$COMPARE/summarize.py" produce-consume "$TSV"
plot "$TSV" "$RUN/produce-consume.svg" "kafka-shell vs Kafka $KAFKA_VERSION, 1 KiB acks=all"
