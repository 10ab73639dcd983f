#!/usr/bin/env bash
# TLS vs plaintext on this machine, kafka-shell and Apache Kafka 4.3.1 (the reference: what TLS costs a broker on the
# JDK's TLS): three shells (the embedded default), one with a PLAINTEXT listener and two with an SSL listener, on
# OpenSSL (BoringSSL through netty-tcnative, the shell's default) and on the JDK's TLS (s3stream.kafka.ssl.engine=jdk),
# and one Kafka with both listeners (the same PKCS12 EC key made here with keytool; TLS 1.3; the clients and Kafka on
# the JDK's TLS); the same
# ProducerPerformance commands as produce-consume.sh (1 KiB, acks=all, linger.ms=5, batch.size=131072, 1 partition):
# unthrottled throughput and latency at 10,000 rec/s, rounds rotating the order.
#   benchmarks/compare/tls.sh              # ROUNDS=3 RECORDS=200000 RATE_SECONDS=20
. "$(dirname "$0")/lib.sh"
ROUNDS="${ROUNDS:-3}"
RECORDS="${RECORDS:-200000}"
RATE_SECONDS="${RATE_SECONDS:-20}"
SETTLE="${SETTLE:-5}"
TLS_PORT="${TLS_PORT:-29093}"
JDK_TLS_PORT="${JDK_TLS_PORT:-29095}"
KAFKA_TLS_PORT="${KAFKA_TLS_PORT:-19094}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
: >"$RUN/perf.log"
TSV="$RUN/tls.tsv"
printf 'round\tsystem\ttest\tload\trec_s\tmb_s\tavg_ms\tp50_ms\tp99_ms\tp999_ms\n' >"$TSV"
machine | tee "$RUN/machine.txt" >&2

KEYS="$RUN/keys"
rm -rf "$KEYS"; mkdir -p "$KEYS"
"$JAVA_HOME/bin/keytool" -genkeypair -alias broker -keyalg EC -groupname secp256r1 -dname CN=localhost \
  -ext SAN=IP:127.0.0.1,DNS:localhost -validity 2 -storetype PKCS12 -keystore "$KEYS/broker.p12" -storepass benchpass
"$JAVA_HOME/bin/keytool" -exportcert -rfc -alias broker -keystore "$KEYS/broker.p12" -storepass benchpass \
  -file "$KEYS/broker.crt"
"$JAVA_HOME/bin/keytool" -importcert -noprompt -alias broker -file "$KEYS/broker.crt" -storetype PKCS12 \
  -keystore "$KEYS/trust.p12" -storepass benchpass

KAFKA_SSL_PORT="$KAFKA_TLS_PORT" KAFKA_SSL_KEYSTORE="$KEYS/broker.p12" KAFKA_SSL_PASSWORD=benchpass start_kafka "$RUN/kafka"
start_shell "$RUN/plain"
SHELL_PORT="$TLS_PORT" start_shell "$RUN/tls" --override "listeners=SSL://127.0.0.1:$TLS_PORT" \
  --override "ssl.keystore.location=$KEYS/broker.p12" --override ssl.keystore.password=benchpass \
  --override s3stream.kafka.ssl.engine=openssl
SHELL_PORT="$JDK_TLS_PORT" start_shell "$RUN/tls-jdk" --override "listeners=SSL://127.0.0.1:$JDK_TLS_PORT" \
  --override "ssl.keystore.location=$KEYS/broker.p12" --override ssl.keystore.password=benchpass \
  --override s3stream.kafka.ssl.engine=jdk

tls_props=(security.protocol=SSL "ssl.truststore.location=$KEYS/trust.p12" ssl.truststore.password=benchpass
  ssl.truststore.type=PKCS12)
printf '%s\n' "${tls_props[@]}" > "$RUN/client.properties"
run_perf() { # system topic records throughput warmup
  local port props out
  case "$1" in
    plain) port="$SHELL_PORT" ;; tls) port="$TLS_PORT" ;; tls-jdk) port="$JDK_TLS_PORT" ;;
    kafka) port="$KAFKA_PORT" ;; kafka-tls) port="$KAFKA_TLS_PORT" ;;
  esac
  props=(bootstrap.servers="127.0.0.1:$port")
  case "$1" in
    *tls|tls-jdk)
      props+=("${tls_props[@]}")
      kt org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" --command-config "$RUN/client.properties" \
        --create --topic "$2" --partitions 1 --replication-factor 1 >/dev/null ;;
    *) create_topic "127.0.0.1:$port" "$2" ;;
  esac
  out="$(kt org.apache.kafka.tools.ProducerPerformance --topic "$2" --num-records "$3" --record-size 1024 \
    --throughput "$4" --warmup-records "$5" --command-property "${props[@]}" acks=all linger.ms=5 batch.size=131072 2>&1)"
  printf '%s\n' "$out" >>"$RUN/perf.log"
  printf '%s\n' "$out" | python3 "$COMPARE/parse_perf.py" producer
}

SYSTEMS=(plain tls tls-jdk kafka kafka-tls)
for ((round = 1; round <= ROUNDS; round++)); do
  order=()
  for ((i = 0; i < ${#SYSTEMS[@]}; i++)); do order+=("${SYSTEMS[$(((i + round - 1) % ${#SYSTEMS[@]}))]}"); done
  for test in unthrottled rate10000; do
    for sys in "${order[@]}"; do
      sleep "$SETTLE"
      quiet; load="$LOAD"
      t="tls-$sys-$test-r$round"
      case "$test" in
        unthrottled) r="$(run_perf "$sys" "$t" "$RECORDS" -1 $((RECORDS / 5)))" ;;
        rate10000) r="$(run_perf "$sys" "$t" $((10000 * RATE_SECONDS)) 10000 $((10000 * 3)))" ;;
      esac
      printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$sys" "$test" "$load" "$(echo "$r" | tr ' ' '\t')" >>"$TSV"
      log "round $round $test $sys (load $load): $r"
    done
  done
done
cleanup
python3 - "$TSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
med = lambda t, s, k: statistics.median(float(r[k]) for r in rows if r["test"] == t and r["system"] == s)
loads = sorted(float(r["load"]) for r in rows)
print(f"\nmedians of {max(int(r['round']) for r in rows)} rounds, load {loads[0]:.1f}-{loads[-1]:.1f}\n")
print("| test | metric | shell plaintext | shell TLS OpenSSL | shell TLS JDK | OpenSSL/plaintext | JDK/plaintext "
      "| Kafka plaintext | Kafka TLS (JDK) | Kafka TLS/plaintext |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for t, ms in (("unthrottled", (("rec/s", "rec_s"), ("p99 ms", "p99_ms"))),
              ("rate10000", (("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("p99.9 ms", "p999_ms")))):
    for label, k in ms:
        a, b, j, c, d = (med(t, s, k) for s in ("plain", "tls", "tls-jdk", "kafka", "kafka-tls"))
        print(f"| {t} | {label} | {a:,.1f} | {b:,.1f} | {j:,.1f} | {b / a:.2f}x | {j / a:.2f}x "
              f"| {c:,.1f} | {d:,.1f} | {d / c:.2f}x |")
PY
plot "$TSV" "$RUN/tls.svg" "TLS vs plaintext: kafka-shell and Kafka $KAFKA_VERSION, 1 KiB acks=all"
