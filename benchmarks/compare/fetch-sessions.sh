#!/usr/bin/env bash
# What a consumer of many partitions costs when few of them move: incremental fetch sessions (KIP-227) on and off in
# kafka-shell, beside Apache Kafka 4.3.1 (which keeps sessions). Three brokers run for the whole script: the shell on
# its defaults, the same build with max.incremental.fetch.session.cache.slots=0 (every fetch lists and answers all
# partitions), and Kafka. Each run creates a fresh topic of PARTITIONS partitions, starts ConsumerPerformance on it
# (a group of one, all partitions), then ProducerPerformance at RATE rec/s of 1 KiB records for RUN_SECONDS (acks=all,
# linger.ms=5: each batch goes to one partition, so most partitions are idle at any moment); the run ends when the
# consumer has read every record. It reports the broker's and the consumer's CPU seconds over the run (user + system;
# the broker's from /proc/PID/stat, the consumer's from its JVM's rusage) and the producer's p50/p99 latency. Rounds
# alternate the order of the three.
#   benchmarks/compare/fetch-sessions.sh          # ROUNDS=3 PARTITIONS=1000 RATE=2000 RUN_SECONDS=20
# Raw rows: .work/run/fetch-sessions/fetch-sessions.tsv
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
PARTITIONS="${PARTITIONS:-1000}"
RATE="${RATE:-2000}"
RUN_SECONDS="${RUN_SECONDS:-20}"
RECORDS=$((RATE * RUN_SECONDS))
NO_SESSIONS_PORT="${NO_SESSIONS_PORT:-29292}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
: >"$RUN/perf.log"
TSV="$RUN/fetch-sessions.tsv"
printf 'round\tsystem\tload\tbroker_cpu_s\tconsumer_cpu_s\tp50_ms\tp99_ms\tconsume_s\n' >"$TSV"
machine | tee "$RUN/machine.txt" >&2

start_kafka "$RUN/kafka"
KAFKA_PID="$(pgrep -f 'kafka\.Kafka ' | head -1)"
start_shell "$RUN/shell"
SESSIONS_PID="$SHELL_PID"; SESSIONS_PORT="$SHELL_PORT"
SHELL_PORT="$NO_SESSIONS_PORT" start_shell "$RUN/shell-no-sessions" \
  --override max.incremental.fetch.session.cache.slots=0
declare -A BS=([shell]="127.0.0.1:$SESSIONS_PORT" [shell-no-sessions]="127.0.0.1:$NO_SESSIONS_PORT"
  [kafka]="127.0.0.1:$KAFKA_PORT")
declare -A PID=([shell]="$SESSIONS_PID" [shell-no-sessions]="$SHELL_PID" [kafka]="$KAFKA_PID")
hz="$(getconf CLK_TCK)"
systems=(shell shell-no-sessions kafka)
for ((round = 1; round <= ROUNDS; round++)); do
  order=("${systems[@]:$((round % 3))}" "${systems[@]:0:$((round % 3))}")
  for sys in "${order[@]}"; do
    topic="many-$round"
    PARTITIONS="$PARTITIONS" create_topic "${BS[$sys]}" "$topic"
    sleep 3
    quiet; load="$LOAD"
    p="${PID[$sys]}"
    c0="$(cpu_ticks "$p")"; t0="$(date +%s%N)"
    # The consumer's JVM is the subshell's only child: `times` prints its user and system seconds when it exits.
    (kt org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "${BS[$sys]}" --topic "$topic" \
      --messages "$RECORDS" --timeout 120000 --group "sessions-$(date +%s%N)" >>"$RUN/perf.log" 2>&1; times) \
      >"$RUN/consumer-times.txt" &
    consumer=$!
    sleep 5 # joined and fetching, every partition idle
    r="$(produce "${BS[$sys]}" "$topic" "$RECORDS" "$RATE" $((RATE * 2)))"
    wait "$consumer"
    c1="$(cpu_ticks "$p")"; t1="$(date +%s%N)"
    # `times`: the subshell's own "XmY.YYYs XmY.YYYs" (user, system), then its children's.
    consumer_cpu="$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] }
      printf "%.2f", s }' "$RUN/consumer-times.txt")"
    row="$(awk -v c=$((c1 - c0)) -v hz="$hz" 'BEGIN { printf "%.2f", c / hz }')"
    read -r _ _ _ p50 p99 _ <<<"$r"
    wall="$(awk -v w=$((t1 - t0)) 'BEGIN { printf "%.1f", w / 1e9 }')"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$sys" "$load" "$row" "$consumer_cpu" "$p50" "$p99" "$wall" \
      >>"$TSV"
    log "round $round $sys (load $load): broker CPU $row s, consumer CPU $consumer_cpu s, producer p50/p99" \
      "$p50/$p99 ms, run $wall s"
  done
done
cleanup
python3 - "$TSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("\nmedians over rounds; CPU seconds over one run (consumer started, producer's records all read)\n")
print("| system | broker CPU s | consumer CPU s | producer p50 / p99 ms | load |")
print("|---|---:|---:|---:|---|")
for s in ("shell", "shell-no-sessions", "kafka"):
    rs = [r for r in rows if r["system"] == s]
    m = {k: statistics.median(float(r[k]) for r in rs) for k in ("broker_cpu_s", "consumer_cpu_s", "p50_ms", "p99_ms")}
    loads = [float(r["load"]) for r in rs]
    print(f"| {s} | {m['broker_cpu_s']:.2f} | {m['consumer_cpu_s']:.2f} | {m['p50_ms']:.0f} / {m['p99_ms']:.0f}"
          f" | {min(loads):.1f}-{max(loads):.1f} |")
EOF
