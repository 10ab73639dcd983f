# Shared by the comparison scripts (sourced, not run). Sets up tools from the package registries on first use,
# starts and stops Apache Kafka 4.3.1 (KRaft, single node, loopback), kafka-shell and MinIO, runs Kafka's perf tools,
# and watches the load. Everything lives under benchmarks/compare/.work (git-ignored).
set -euo pipefail
COMPARE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$COMPARE/../.." && pwd)"
WORK="${COMPARE_WORK:-$COMPARE/.work}"
TOOLS="$WORK/tools"
RUN="$WORK/run/$(basename "$0" .sh)"
KAFKA_VERSION=4.3.1
KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
SHELL_PORT="${SHELL_PORT:-29092}"
MINIO_PORT="${MINIO_PORT:-29000}"
NOOP_PORT="${NOOP_PORT:-39092}"
MAX_LOAD="${MAX_LOAD:-2.5}"
. "$ROOT/.mvn/java25.sh"
JAVA="$JAVA_HOME/bin/java"
PIDS=()

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Brokers' data directories (registered by start_kafka, start_shell, shell-ab.sh): what they stored is deleted when the
# script ends, their logs and configuration stay; KEEP_DATA=1 keeps everything (one tls.sh run of 1,000,000-record
# rounds left 21 GB behind).
DATA_DIRS=()
cleanup() {
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
  done
  PIDS=()
  if [ "${KEEP_DATA:-0}" != 1 ]; then
    for d in "${DATA_DIRS[@]:-}"; do
      [ -n "$d" ] && [ -d "$d" ] && find "$d" -mindepth 1 -maxdepth 1 ! -name '*.log' ! -name '*.properties' \
        -exec rm -rf {} +
    done
  fi
  DATA_DIRS=()
}
trap cleanup EXIT INT TERM

# Kafka 4.3.1 broker and perf tools from Maven Central, as one class path.
setup_kafka_tools() {
  mkdir -p "$TOOLS"
  if [ ! -s "$TOOLS/kafka.classpath" ]; then
    log "fetching Apache Kafka $KAFKA_VERSION jars from Maven Central"
    cat > "$TOOLS/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>compare-tools</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-server</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-storage</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>2.24.3</version></dependency>
  </dependencies>
</project>
POM
    "$ROOT/mvnw" -q -B -f "$TOOLS/pom.xml" dependency:build-classpath -Dmdep.outputFile="$TOOLS/kafka.classpath.tmp"
    mv "$TOOLS/kafka.classpath.tmp" "$TOOLS/kafka.classpath"
    cat > "$TOOLS/log4j2.properties" <<'L4J'
status = error
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
L4J
  fi
  KAFKA_CP="$(cat "$TOOLS/kafka.classpath")"
}

setup_fio() {
  command -v fio >/dev/null 2>&1 || { log "installing fio"; apt-get update -qq && apt-get install -y -qq fio; }
}

prewritten() { # file: fio's target, written whole once (synchronous writes to unwritten extents are several times slower)
  [ -s "$1" ] && return
  log "pre-writing 1 GiB at $1"
  dd if=/dev/zero of="$1" bs=1M count=1024 oflag=direct status=none
}

build_shell() {
  log "building kafka-shell and the benchmarks"
  (cd "$ROOT" && ./mvnw -q -B -pl kafka-shell,benchmarks -am -DskipTests package)
  train_aot "$ROOT"
}

# train_aot root: trains the AOT cache of the kafka-shell in that tree (bin/kafka-shell --train-aot, ~30 s), so the
# brokers the scripts start run as deployed with one. SHELL_AOT=0: no training, and no broker uses a cache.
# A tree from before the AOT cache (an A/B base) is left as it is.
train_aot() {
  if [ "${SHELL_AOT:-1}" = 0 ]; then
    export KAFKA_SHELL_AOT_CACHE="$WORK/no-aot-cache" # a file that does not exist: the launchers then use none
    return 0
  fi
  grep -q -e '--train-aot' "$1/bin/kafka-shell" || return 0
  log "training the AOT cache of $1's kafka-shell"
  mkdir -p "$RUN"
  KAFKA_SHELL_HEAP="${KAFKA_SHELL_HEAP:-1g}" KAFKA_SHELL_DIRECT="${KAFKA_SHELL_DIRECT:-768m}" \
    "$1/bin/kafka-shell" --train-aot >"$RUN/aot-training.log" 2>&1 || { tail -20 "$RUN/aot-training.log" >&2; return 1; }
}

# Runs a Kafka tool class on the Kafka class path.
kt() { "$JAVA" -Xmx512m -Dlog4j2.configurationFile="$TOOLS/log4j2.properties" -cp "$KAFKA_CP" "$@"; }

wait_port() { # host port seconds [pid that must stay alive]
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
    if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then log "process $4 exited before listening on $2"; return 1; fi
    sleep 0.1
  done
  log "nothing listens on $1:$2 after $3 s"; return 1
}

# start_kafka dir: with KAFKA_SSL_PORT set (and KAFKA_SSL_KEYSTORE, a PKCS12 file, and KAFKA_SSL_PASSWORD), Kafka also
# listens with TLS on that port.
start_kafka() { # data dir
  local dir="$1" ssl_listener="" ssl_advertised="" ssl_map=""
  rm -rf "$dir"; mkdir -p "$dir"
  DATA_DIRS+=("$dir")
  if [ -n "${KAFKA_SSL_PORT:-}" ]; then
    ssl_listener=",SSL://127.0.0.1:$KAFKA_SSL_PORT"; ssl_advertised=",SSL://127.0.0.1:$KAFKA_SSL_PORT"; ssl_map=",SSL:SSL"
  fi
  cat > "$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT$ssl_listener
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT$ssl_advertised
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT$ssl_map
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/logs
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
  if [ -n "${KAFKA_SSL_PORT:-}" ]; then
    printf 'ssl.keystore.type=PKCS12\nssl.keystore.location=%s\nssl.keystore.password=%s\n' \
      "$KAFKA_SSL_KEYSTORE" "$KAFKA_SSL_PASSWORD" >>"$dir/server.properties"
  fi
  kt kafka.tools.StorageTool format -t "$(kt kafka.tools.StorageTool random-uuid)" -c "$dir/server.properties" >/dev/null
  "$JAVA" -Xmx1g -Xms1g -XX:+UseG1GC -Dlog4j2.configurationFile="$TOOLS/log4j2.properties" -cp "$KAFKA_CP" \
    kafka.Kafka "$dir/server.properties" >"$dir/kafka.log" 2>&1 &
  PIDS+=($!)
  KAFKA_PID=$!
  wait_port 127.0.0.1 "$KAFKA_PORT" 60 "$KAFKA_PID"
  sleep 2
  log "Kafka $KAFKA_VERSION up on 127.0.0.1:$KAFKA_PORT (pid $KAFKA_PID, data $dir)"
}

# start_shell dir [--override k=v ...]: kafka-shell with its embedded default (WAL file + file:// store) unless overridden.
start_shell() {
  local dir="$1"; shift
  rm -rf "$dir"; mkdir -p "$dir"
  DATA_DIRS+=("$dir")
  KAFKA_SHELL_HEAP="${KAFKA_SHELL_HEAP:-1g}" KAFKA_SHELL_DIRECT="${KAFKA_SHELL_DIRECT:-768m}" \
    "$ROOT/bin/kafka-shell" --override listeners="PLAINTEXT://127.0.0.1:$SHELL_PORT" \
    --override s3stream.data.dir="$dir" --override group.initial.rebalance.delay.ms=0 "$@" \
    >"$dir/shell.log" 2>&1 &
  PIDS+=($!)
  SHELL_PID=$!
  if ! wait_port 127.0.0.1 "$SHELL_PORT" 60 "$SHELL_PID"; then
    tail -20 "$dir/shell.log" >&2; return 1
  fi
  log "kafka-shell up on 127.0.0.1:$SHELL_PORT (pid $SHELL_PID, data $dir)"
}

start_noop() { # the no-op broker (io.s3stream.benchmarks.NoOpBroker: answers produce, stores nothing): the yardstick
  local log="$RUN/noop-broker.log"
  mkdir -p "$RUN"
  "$JAVA" -Xmx256m -cp "$ROOT/benchmarks/target/benchmarks.jar" io.s3stream.benchmarks.NoOpBroker "$NOOP_PORT" \
    >"$log" 2>&1 &
  PIDS+=($!)
  NOOP_PID=$!
  wait_port 127.0.0.1 "$NOOP_PORT" 30 "$NOOP_PID"
  log "no-op broker up on 127.0.0.1:$NOOP_PORT (pid $NOOP_PID)"
}
stop_pid() { # pid: SIGTERM and wait (kafka-shell uploads its log cache on SIGTERM)
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

start_minio() { # data dir; sets S3_URI_BASE
  local dir="$1"
  rm -rf "$dir"; mkdir -p "$dir"
  local minio="${MINIO_BIN:-$(command -v minio || echo /opt/s3stream-tools/bin/minio)}"
  [ -x "$minio" ] || { log "no MinIO binary (set MINIO_BIN; see TEST-INFRA.md for the pinned go install)"; return 1; }
  MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin MINIO_UPDATE=off \
    "$minio" server "$dir/data" --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$((MINIO_PORT + 1))" \
    >"$dir/minio.log" 2>&1 &
  PIDS+=($!)
  MINIO_PID=$!
  local i
  for ((i = 0; i < 300; i++)); do
    curl -fs "http://127.0.0.1:$MINIO_PORT/minio/health/ready" >/dev/null && break
    sleep 0.1
  done
  curl -fs -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user minioadmin:minioadmin \
    "http://127.0.0.1:$MINIO_PORT/bench" >/dev/null
  S3_URI="s3://bench/s3stream?endpoint=http://127.0.0.1:$MINIO_PORT&region=us-east-1&pathStyle=true&accessKey=minioadmin&secretKey=minioadmin"
  log "MinIO up on 127.0.0.1:$MINIO_PORT, bucket 'bench'"
}

# Waits, after heavy writes, until the disk under $WORK has been idle for QUIESCE_IDLE_S seconds in a row (default 90;
# idle: under 2 MB/s of writes in each second): a broker is then no longer compacting, uploading or flushing what an
# earlier test wrote. "Heavy": over QUIESCE_AFTER_MB (default 1536: more than one 60-s run at 10,000 rec/s writes)
# written since the last quiesce, or since quiesce_mark; below that it returns at once. The idle time is longer than
# the shell's 60-s compaction interval, so a compaction round that has not started yet is waited for too.
# Measured 2026-12-03: after 2 x 1 GB of unthrottled produce the shell's compaction ran for about
# a minute, starting up to 25 s after the produce ended, and a 60-s producer run at 2,000 rec/s that met it had a p99.9
# of 88-102 ms (24 ms when it met only its end). At most QUIESCE_MAX_S seconds (default 600), then it measures anyway;
# QUIESCE=0 turns it off. Logs what it found and waited.
QUIESCE_MARK=""
disk_written_mb() { # MB written so far to the block device holding $WORK (whole device or partition), or empty
  local dev
  dev="$(basename "$(df --output=source "$WORK" | tail -1)")"
  awk -v d="$dev" '$3 == d { print int($10 * 512 / 1048576) }' /proc/diskstats
}
quiesce_mark() { QUIESCE_MARK="$(disk_written_mb)"; }
quiesce() {
  [ "${QUIESCE:-1}" = 0 ] && return 0
  local now idle=0 waited=0 last written
  now="$(disk_written_mb)"
  [ -n "$now" ] || { log "quiesce: no /proc/diskstats entry for the disk of $WORK; not waiting"; return 0; }
  written=$((now - ${QUIESCE_MARK:-$now}))
  if ((written <= ${QUIESCE_AFTER_MB:-1536})); then
    return 0
  fi
  last="$now"
  while ((idle < ${QUIESCE_IDLE_S:-90} && waited < ${QUIESCE_MAX_S:-600})); do
    sleep 1
    waited=$((waited + 1))
    now="$(disk_written_mb)"
    if ((now - last < 2)); then idle=$((idle + 1)); else idle=0; fi
    last="$now"
  done
  log "quiesce: $written MB written since the last quiesce; waited $waited s ($((now - QUIESCE_MARK - written)) MB more written meanwhile), idle for the last $idle s"
  QUIESCE_MARK="$now"
}

# Writes back every dirty page first, so no run pays for an earlier run's deferred writes: Kafka with default
# flushing leaves each produce run's bytes dirty in the page cache, and the kernel writes them out 30 s later
# (vm.dirty_expire_centisecs), in the middle of whichever run comes next. Measured 2026-11-27: 200 MB written back at
# 18:41:51 in one second, during the shell's 2,000 rec/s run, whose 5-s window held a 65 ms record (13-14 ms in the
# others) and made that round's p99.9 53 ms instead of 14. Logs how much it wrote back when that was over 16 MB.
# Then waits while the 1-minute load is above MAX_LOAD, 60 s at a time, and while the hypervisor steals more than
# MAX_STEAL_PCT percent of the machine's CPU (sampled over STEAL_SAMPLE_S seconds, default 3; 30 s between samples),
# from a budget of WAIT_BUDGET seconds for the whole script (default 1200); then sets LOAD, which is recorded next to
# every figure. The load average does not count steal: device-stalls.sh at 10,000 rec/s lost 21 s of CPU in one 60-s
# round at load 0.3-1.1.
WAIT_LEFT="${WAIT_BUDGET:-1200}"
quiet() {
  local load dirty pct
  dirty="$(awk '/^Dirty:/ { print int($2 / 1024) }' /proc/meminfo)"
  sync
  ((dirty <= 16)) || log "wrote back $dirty MB of dirty pages before measuring"
  while :; do
    load="$(cut -d' ' -f1 /proc/loadavg)"
    awk -v l="$load" -v m="$MAX_LOAD" 'BEGIN { exit !(l <= m) }' && break
    if ((WAIT_LEFT < 60)); then log "load $load > $MAX_LOAD, wait budget spent: measuring anyway"; break; fi
    log "load $load > $MAX_LOAD: waiting 60 s (budget left ${WAIT_LEFT} s)"
    sleep 60
    WAIT_LEFT=$((WAIT_LEFT - 60))
  done
  while :; do
    pct="$(steal_pct "${STEAL_SAMPLE_S:-3}")"
    awk -v p="$pct" -v m="${MAX_STEAL_PCT:-5}" 'BEGIN { exit !(p <= m) }' && break
    if ((WAIT_LEFT < 30)); then log "$pct % of the CPU stolen, wait budget spent: measuring anyway"; break; fi
    log "$pct % of the CPU stolen > ${MAX_STEAL_PCT:-5} %: waiting 30 s (budget left ${WAIT_LEFT} s)"
    sleep 30
    WAIT_LEFT=$((WAIT_LEFT - 30))
  done
  LOAD="$(cut -d' ' -f1 /proc/loadavg)"
}

create_topic() { # bootstrap topic [config=value ...]; PARTITIONS=N (default 1) for more partitions
  local bs="$1" topic="$2"; shift 2
  local cfg=()
  for c in "$@"; do cfg+=(--config "$c"); done
  kt org.apache.kafka.tools.TopicCommand --bootstrap-server "$bs" --create --topic "$topic" \
    --partitions "${PARTITIONS:-1}" --replication-factor 1 "${cfg[@]}" >/dev/null
}

# produce bootstrap topic records throughput warmup: ProducerPerformance, 1 KiB, acks=all linger.ms=5 batch.size=131072.
# PRODUCER_PROPS: more producer properties, space-separated key=value (e.g. "compression.type=lz4").
# Prints: records_per_s mb_per_s avg_ms p50_ms p99_ms p999_ms (of the steady state after the warm-up records)
produce() {
  local bs="$1" topic="$2" records="$3" tput="$4" warmup="$5" out extra=()
  read -r -a extra <<<"${PRODUCER_PROPS:-}"
  ((warmup < records / 2)) || warmup=$((records / 2))
  # Each output line gets the wall-clock time it was printed at, so perf.log's 5-s windows line up with a broker's
  # JFR recording or logs.
  out="$(kt org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$records" --record-size 1024 \
    --throughput "$tput" --warmup-records "$warmup" \
    --command-property bootstrap.servers="$bs" acks=all linger.ms=5 batch.size=131072 "${extra[@]}" 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$(date -u +%H:%M:%S.%3N)" "$line"; done)"
  printf '%s\n' "$out" >>"$RUN/perf.log"
  printf '%s\n' "$out" | python3 "$COMPARE/parse_perf.py" producer
}

# consume bootstrap topic records: ConsumerPerformance from the beginning. Prints: fetch_mb_per_s fetch_rec_per_s
consume() {
  local bs="$1" topic="$2" records="$3" out
  out="$(kt org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$bs" --topic "$topic" \
    --messages "$records" --timeout 120000 --command-property fetch.max.bytes=52428800 \
    --group "perf-$(date +%s%N)" 2>&1)"
  printf '%s\n' "$out" >>"$RUN/perf.log"
  printf '%s\n' "$out" | python3 "$COMPARE/parse_perf.py" consumer
}

# start_passes bootstrap topic records file: ConsumerPerformance reading the topic from the beginning, pass after pass
# in the background (one "fetch_mb_per_s fetch_rec_per_s" line per pass in file) until stop_passes file.
start_passes() {
  local bs="$1" topic="$2" records="$3" file="$4"
  : >"$file"; rm -f "$file.stop" # a stop file left by an earlier run
  ( while [ ! -e "$file.stop" ]; do consume "$bs" "$topic" "$records" >>"$file" || break; done ) &
  PASSES_PID=$!
}
stop_passes() { touch "$1.stop"; wait "$PASSES_PID" || true; }

# CPU ticks (CLK_TCK per second) the hypervisor has taken from this machine's cores so far (/proc/stat's steal): time
# the machine was ready to run and did not. The load average does not count it: a run with a low load can still have
# lost a core to the host's other guests for seconds (device-stalls.sh at 10,000 rec/s: 21 s of 60 in one round).
steal_ticks() { awk '/^cpu / { print $9 }' /proc/stat; }
# Seconds stolen since the ticks "$1" (a steal_ticks reading), for a run's row.
steal_since() { awk -v t0="$1" -v t1="$(steal_ticks)" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (t1 - t0) / hz }'; }

# Percent of the machine's CPU (all cores) the hypervisor stole over the next "$1" seconds.
steal_pct() {
  local mark; mark="$(steal_mark)"
  sleep "$1"
  steal_pct_since "$mark"
}

# The machine's steal and total CPU ticks so far, for steal_pct_since.
steal_mark() { awk '/^cpu / { for (i = 2; i <= 9; i++) t += $i; print $9, t }' /proc/stat; }
# Percent of the machine's CPU (all cores) the hypervisor stole since the steal_mark reading "$1".
steal_pct_since() {
  awk -v a="$1" -v b="$(steal_mark)" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[2] - x[2]
    printf "%.1f", (t > 0 ? 100 * (y[1] - x[1]) / t : 0) }'
}

# Whether a run that started at the steal_mark "$1" and was attempt "$2" is to be discarded and run again: the host
# stole more than MAX_RUN_STEAL_PCT percent (default 5) of the machine's CPU during it, and fewer than STEAL_RETRIES
# (default 2) attempts were discarded before it (the last attempt is kept whatever its steal). quiet() samples only
# before a run; a core can be taken in the middle of one. Sets STOLEN_PCT.
run_stolen() {
  STOLEN_PCT="$(steal_pct_since "$1")"
  (($2 <= ${STEAL_RETRIES:-2})) && awk -v p="$STOLEN_PCT" -v m="${MAX_RUN_STEAL_PCT:-5}" 'BEGIN { exit !(p > m) }'
}

# CPU ticks (user + system, CLK_TCK per second) the process has used so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# CPU ticks the whole machine has spent busy so far (user, nice, system, irq, softirq; not idle, iowait or steal).
machine_busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
# Seconds between two tick readings "$1" and "$2".
ticks_s() { awk -v a="$1" -v b="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }'; }

machine() {
  printf 'machine: %s cores, %s GiB RAM, %s, disk %s; JDK %s; %s\n' "$(nproc)" \
    "$(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" "$(uname -sr)" \
    "$(df -T "$WORK" | awk 'NR == 2 { print $2 " on " $1 }')" \
    "$("$JAVA" -version 2>&1 | head -1 | cut -d'"' -f2)" "$(date -u +%Y-%m-%dT%H:%MZ)"
}

plot() { # tsv out.svg title: the run's picture (benchmarks/compare/plot.py), when a Python with matplotlib is found
  local py
  for py in "${S3STREAM_PLOT_PYTHON:-}" python3 /opt/s3stream-tools/venv/bin/python; do
    if [ -n "$py" ] && "$py" -c 'import matplotlib' 2>/dev/null; then
      "$py" "$ROOT/benchmarks/compare/plot.py" "$1" "$2" "$3" && log "plot: $2"
      return 0
    fi
  done
  log "no plot: no Python with matplotlib (pip install matplotlib, or set S3STREAM_PLOT_PYTHON)"
}
