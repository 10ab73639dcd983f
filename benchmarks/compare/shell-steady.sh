#!/usr/bin/env bash
# Steady-state CPU of one kafka-shell at a fixed rate, per thread: for a change that may cost CPU only once the JIT has
# settled (or only before). One shell at a time (embedded default), warmed with 200,000 records unthrottled and six
# 10-s runs at RATE, then RUNS measured 20-s runs at RATE (1 KiB records, acks=all linger.ms=5 batch.size=131072,
# 1 partition). Prints per run: the load, the shell's CPU (user + system, /proc/<pid>/stat), the producer's
# percentiles and every thread (by name) that used at least 100 ms.
#   AOT=none benchmarks/compare/shell-steady.sh        # no AOT cache
#   AOT=classes benchmarks/compare/shell-steady.sh     # the default cache (bin/kafka-shell --train-aot)
#   AOT=profiles benchmarks/compare/shell-steady.sh    # a cache with the JIT's profiles (--train-aot --profiles)
# RATE (default 10000), RUNS (default 3), REPEAT (default 1: shells started one after the other per configuration;
# AOT may list several, "none profiles", which then alternate).
. "$(dirname "$0")/lib.sh"
RATE="${RATE:-10000}"
RUNS="${RUNS:-3}"
REPEAT="${REPEAT:-1}"
read -r -a CONFIGS <<<"${AOT:-classes}"
setup_kafka_tools
SHELL_AOT=0 build_shell # the caches are trained below, per configuration
mkdir -p "$RUN"
machine | tee "$RUN/machine.txt" >&2
for c in "${CONFIGS[@]}"; do
  case "$c" in
    none) ;;
    classes) KAFKA_SHELL_AOT_CACHE="$RUN/classes.aot" KAFKA_SHELL_HEAP=1g KAFKA_SHELL_DIRECT=768m \
      "$ROOT/bin/kafka-shell" --train-aot >"$RUN/aot-classes.log" 2>&1 ;;
    profiles) KAFKA_SHELL_AOT_CACHE="$RUN/profiles.aot" KAFKA_SHELL_HEAP=1g KAFKA_SHELL_DIRECT=768m \
      "$ROOT/bin/kafka-shell" --train-aot --profiles >"$RUN/aot-profiles.log" 2>&1 ;;
    *) echo "AOT: none, classes or profiles, was '$c'" >&2; exit 2 ;;
  esac
done

threads() { # per thread name: CPU ticks so far
  local t s
  for t in /proc/"$SHELL_PID"/task/*; do
    s=($(cut -d')' -f2 "$t/stat"))
    echo "$(tr ' ' _ <"$t/comm") ${s[11]} ${s[12]}"
  done | awk '{c[$1] += $2 + $3} END {for (k in c) print k, c[k]}' | sort
}
perf() { # records: ProducerPerformance at RATE; prints its last line's percentiles
  kt org.apache.kafka.tools.ProducerPerformance --topic steady --num-records "$1" --record-size 1024 \
    --throughput "$RATE" --producer-props bootstrap.servers="127.0.0.1:$SHELL_PORT" acks=all linger.ms=5 \
    batch.size=131072 2>/dev/null | tail -1 | sed 's/.*latency, //'
}
tick_ms=$((1000 / $(getconf CLK_TCK)))
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$1/stat"; }
for ((r = 1; r <= REPEAT; r++)); do
  for c in "${CONFIGS[@]}"; do
    cache="$RUN/$c.aot"; [ "$c" = none ] && cache="$RUN/no-cache"
    export KAFKA_SHELL_AOT_CACHE="$cache"
    start_shell "$RUN/shell"
    kt org.apache.kafka.tools.ProducerPerformance --topic steady --num-records 200000 --record-size 1024 \
      --throughput -1 --producer-props bootstrap.servers="127.0.0.1:$SHELL_PORT" acks=all linger.ms=5 \
      batch.size=131072 >/dev/null 2>&1
    for ((i = 0; i < 6; i++)); do perf "$((RATE * 10))" >/dev/null; done
    for ((i = 1; i <= RUNS; i++)); do
      threads >"$RUN/before"; c0=$(cpu_ms "$SHELL_PID")
      p="$(perf "$((RATE * 20))")"
      c1=$(cpu_ms "$SHELL_PID"); threads >"$RUN/after"
      busy="$(join "$RUN/before" "$RUN/after" | awk -v t="$tick_ms" '{d = ($3 - $2) * t; if (d >= 100) printf "%s=%d ", $1, d}')"
      echo "$c repeat $r run $i load $(cut -d' ' -f1 /proc/loadavg) cpu_ms $((c1 - c0)) | $p | $busy"
    done
    stop_pid "$SHELL_PID"
  done
done
