#!/bin/sh
# Producer and consumer throughput/latency against a running kafka-shell, with Kafka's own perf tools
# (org.apache.kafka:kafka-tools:4.3.1 from Maven Central, fetched on first use into kafka-shell/target/perf-tools).
#   bin/kafka-shell &            # or any broker
#   kafka-shell/bench.sh [bootstrap] [records]
# Runs: 1 KiB records, acks=all, linger.ms=5 batch.size=131072, unthrottled; then a fixed 2,000 rec/s; then a
# ConsumerPerformance read of everything. Record results in kafka-shell/README.md.
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/.mvn/java25.sh"
BOOTSTRAP="${1:-127.0.0.1:9092}"
RECORDS="${2:-200000}"
TOOLS="$ROOT/kafka-shell/target/perf-tools"
if [ ! -f "$TOOLS/classpath.txt" ]; then
  mkdir -p "$TOOLS"
  cat > "$TOOLS/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>perf-tools</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>4.3.1</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
  (cd "$TOOLS" && "$ROOT/mvnw" -q -B -f "$TOOLS/pom.xml" dependency:build-classpath -Dmdep.outputFile="$TOOLS/classpath.txt")
fi
CP="$(cat "$TOOLS/classpath.txt")"
TOPIC="bench-$(date +%s)"
run() { "$JAVA_HOME/bin/java" -Xmx512m -cp "$CP" "$@"; }
echo "== unthrottled: $RECORDS x 1 KiB, acks=all, linger.ms=5, batch.size=131072"
run org.apache.kafka.tools.ProducerPerformance --topic "$TOPIC" --num-records "$RECORDS" --record-size 1024 \
  --throughput -1 --command-property bootstrap.servers="$BOOTSTRAP" acks=all linger.ms=5 batch.size=131072
echo "== fixed 2,000 rec/s for 30 s: 1 KiB, acks=all, linger.ms=5, batch.size=131072"
run org.apache.kafka.tools.ProducerPerformance --topic "$TOPIC-rate" --num-records 60000 --record-size 1024 \
  --throughput 2000 --command-property bootstrap.servers="$BOOTSTRAP" acks=all linger.ms=5 batch.size=131072
echo "== ConsumerPerformance: read the unthrottled topic"
run org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$BOOTSTRAP" --topic "$TOPIC" \
  --messages "$RECORDS" --timeout 60000
