#!/usr/bin/env bash
# Device stalls: how much of each broker's producer tail at a fixed rate is the disk's own. A probe
# (device_probe.py: 4 KiB O_DIRECT|O_DSYNC writes, 50 per second, into its own file on the brokers' disk) times every
# flushed write while a producer (io.s3stream.benchmarks.LatencyTimeline: ProducerPerformance's settings, 1 KiB
# records, acks=all linger.ms=5 batch.size=131072, 1 partition, every record's send time and latency kept) runs at a
# fixed rate; stall_attribution.py then counts the records of at least 10 / 20 ms that were waiting while a probe
# write took at least 10 ms. A durable ack waits for the device, so a device-wide stall holds every record in flight;
# a broker that acknowledges from the page cache (Kafka's default) does not wait for it.
#   benchmarks/compare/device-stalls.sh            # ROUNDS=3 RATE=2000 RATE_SECONDS=60 WARMUP_SECONDS=10
# Before the rounds every broker takes WARM_SECONDS (30) at the rate, not kept, so the rounds measure it past its JIT.
# Systems (SYSTEMS, default all four): kafka (default flushing), kafka-flush1 (flush.messages=1), shell (kafka-shell's
# embedded default: wal-blockdev file + file:// objects), noop (NoOpBroker, stores nothing: the client and CPU alone).
# Each round runs every system once, the order rotating per round; raw rows go to .work/run/device-stalls/*.tsv, each
# run's timeline and probe log beside them. steal_s: CPU seconds the hypervisor took from this machine during the run
# (lib.sh's steal_ticks), which the load average does not show.
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
RATE="${RATE:-2000}"
RATE_SECONDS="${RATE_SECONDS:-60}"
WARMUP_SECONDS="${WARMUP_SECONDS:-10}"
SETTLE="${SETTLE:-5}"
read -ra SYSTEMS <<<"${SYSTEMS:-kafka kafka-flush1 shell noop}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
TSV="$RUN/device-stalls.tsv"
printf 'round\tsystem\tload\tsteal_s\trec_s\tp50_ms\tp99_ms\tp999_ms\tmax_ms\tstalls10\tstalls20\tstall_max_ms\tslow10\tslow10_in_stall\tslow20\tslow20_in_stall\n' >"$TSV"
machine | tee "$RUN/machine.txt" >&2

case " ${SYSTEMS[*]} " in *" kafka "* | *" kafka-flush1 "*) start_kafka "$RUN/kafka" ;; esac
case " ${SYSTEMS[*]} " in *" shell "*) start_shell "$RUN/shell" ;; esac
case " ${SYSTEMS[*]} " in *" noop "*) start_noop ;; esac

bootstrap() {
  case "$1" in shell) echo "127.0.0.1:$SHELL_PORT" ;; noop) echo "127.0.0.1:$NOOP_PORT" ;; *) echo "127.0.0.1:$KAFKA_PORT" ;; esac
}

timeline() { # bootstrap topic seconds warmup_seconds out
  "$JAVA" -Xmx512m -Dlog4j2.configurationFile="$TOOLS/log4j2.properties" \
    -cp "$ROOT/benchmarks/target/benchmarks.jar" io.s3stream.benchmarks.LatencyTimeline "$1" "$2" "$RATE" "$3" "$4" "$5" \
    2>>"$RUN/timeline.err"
}

# Every broker first takes WARM_SECONDS (default 30) at the rate, not kept: the rounds measure brokers past their JIT.
for sys in "${SYSTEMS[@]}"; do
  bs="$(bootstrap "$sys")"
  create_topic "$bs" "ds-$sys-warm"
  timeline "$bs" "ds-$sys-warm" "${WARM_SECONDS:-30}" 0 "$RUN/$sys-warm.timeline" >/dev/null
done

for ((round = 1; round <= ROUNDS; round++)); do
  for ((i = 0; i < ${#SYSTEMS[@]}; i++)); do
    sys="${SYSTEMS[$(((i + round - 1) % ${#SYSTEMS[@]}))]}"
    sleep "$SETTLE"
    quiet; load="$LOAD"
    bs="$(bootstrap "$sys")" t="ds-$sys-r$round" cfg=()
    [ "$sys" = kafka-flush1 ] && cfg=(flush.messages=1)
    create_topic "$bs" "$t" "${cfg[@]}"
    timeline="$RUN/$sys-r$round.timeline" probe="$RUN/$sys-r$round.probe"
    steal0="$(steal_ticks)"
    python3 "$COMPARE/device_probe.py" "$WORK/device-probe.dat" "$probe" &
    probe_pid=$!
    PIDS+=("$probe_pid")
    r="$(timeline "$bs" "$t" "$RATE_SECONDS" "$WARMUP_SECONDS" "$timeline")"
    steal="$(steal_since "$steal0")"
    kill "$probe_pid"; wait "$probe_pid" || true
    a="$(python3 "$COMPARE/stall_attribution.py" "$timeline" "$probe")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$sys" "$load" "$steal" "$(echo "$r" | tr ' ' '\t')" "$(echo "$a" | tr ' ' '\t')" >>"$TSV"
    log "round $round $sys (load $load, $steal s stolen): rec/s p50 p99 p99.9 max = $r; stalls>=10/20 max, slow>=10 (in stall), slow>=20 (in stall) = $a"
  done
done
cleanup
python3 "$COMPARE/summarize.py" device-stalls "$TSV"
