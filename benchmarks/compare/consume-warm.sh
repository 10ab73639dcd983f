#!/usr/bin/env bash
# Consumer throughput and broker CPU, kafka-shell vs Apache Kafka 4.3.1, on one long-lived broker each: both get the
# same RECORDS (1 KiB, unthrottled ProducerPerformance into one partition), then ROUNDS alternated ConsumerPerformance
# reads of the whole topic from the start (produce-consume.sh's consume command). Each read reports fetch MB/s, the
# broker's CPU seconds (user + system, /proc/PID/stat) and how many of them its JIT compiler threads took: a short read
# on a broker that has not run its read path before pays for compiling it, so the early and late rounds are reported
# apart. The shell reads its backlog from objects (2 GB is far over its log cache), Kafka from the page cache.
#   benchmarks/compare/consume-warm.sh          # ROUNDS=6 RECORDS=2000000
# Raw rows: .work/run/consume-warm/consume-warm.tsv
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-6}"
RECORDS="${RECORDS:-2000000}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
: >"$RUN/perf.log"
TSV="$RUN/consume-warm.tsv"
printf 'round\tsystem\tload\tmb_s\twall_s\tbroker_cpu_s\tjit_cpu_s\n' >"$TSV"
machine | tee "$RUN/machine.txt" >&2

jit_ticks() { # CPU ticks of the process's JIT compiler threads
  local t sum=0
  for t in /proc/"$1"/task/*; do
    case "$(cat "$t/comm" 2>/dev/null)" in C1\ Compiler* | C2\ Compiler*) sum=$((sum + $(awk '{ print $14 + $15 }' "$t/stat"))) ;; esac
  done
  echo "$sum"
}

start_kafka "$RUN/kafka"
start_shell "$RUN/shell"
KAFKA_PID="$(pgrep -f 'kafka\.Kafka ' | head -1)"
[ -n "$KAFKA_PID" ] || { log "cannot find Kafka's pid"; exit 1; }
declare -A BS=([shell]="127.0.0.1:$SHELL_PORT" [kafka]="127.0.0.1:$KAFKA_PORT")
declare -A PID=([shell]="$SHELL_PID" [kafka]="$KAFKA_PID")
for sys in shell kafka; do
  create_topic "${BS[$sys]}" warm
  log "$sys: produced $RECORDS records: $(produce "${BS[$sys]}" warm "$RECORDS" -1 $((RECORDS / 5)))"
done
hz="$(getconf CLK_TCK)"
for ((round = 1; round <= ROUNDS; round++)); do
  order=(shell kafka)
  ((round % 2 == 0)) && order=(kafka shell)
  for sys in "${order[@]}"; do
    sleep 3
    quiet; load="$LOAD"
    p="${PID[$sys]}"
    c0="$(cpu_ticks "$p")"; j0="$(jit_ticks "$p")"; t0="$(date +%s%N)"
    r="$(consume "${BS[$sys]}" warm "$RECORDS")"
    c1="$(cpu_ticks "$p")"; j1="$(jit_ticks "$p")"; t1="$(date +%s%N)"
    mb="$(echo "$r" | cut -d' ' -f1)"
    row="$(awk -v w=$((t1 - t0)) -v c=$((c1 - c0)) -v j=$((j1 - j0)) -v hz="$hz" \
      'BEGIN { printf "%.1f\t%.2f\t%.2f", w / 1e9, c / hz, j / hz }')"
    printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$sys" "$load" "$mb" "$row" >>"$TSV"
    log "round $round $sys (load $load): $mb MB/s; wall, broker CPU, of it JIT (s): $(echo "$row" | tr '\t' ' ')"
  done
done
cleanup
python3 - "$TSV" "$ROUNDS" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
half = int(sys.argv[2]) // 2
print(f"\nmedians; early = rounds 1-{half}, late = rounds {half + 1}-{sys.argv[2]}; CPU in seconds per read of the topic\n")
print("| rounds | Kafka MB/s | shell MB/s | shell/Kafka | Kafka CPU (JIT) | shell CPU (JIT) | load |")
print("|---|---:|---:|---:|---:|---:|---|")
for name, sel in (("early", lambda r: int(r["round"]) <= half), ("late", lambda r: int(r["round"]) > half)):
    m = {}
    for s in ("kafka", "shell"):
        rs = [r for r in rows if r["system"] == s and sel(r)]
        m[s] = {k: statistics.median(float(r[k]) for r in rs) for k in ("mb_s", "broker_cpu_s", "jit_cpu_s")}
    loads = [float(r["load"]) for r in rows if sel(r)]
    print(f"| {name} | {m['kafka']['mb_s']:.0f} | {m['shell']['mb_s']:.0f} | {m['shell']['mb_s'] / m['kafka']['mb_s']:.2f}x"
          f" | {m['kafka']['broker_cpu_s']:.2f} ({m['kafka']['jit_cpu_s']:.2f}) | {m['shell']['broker_cpu_s']:.2f}"
          f" ({m['shell']['jit_cpu_s']:.2f}) | {min(loads):.1f}-{max(loads):.1f} |")
EOF
