#!/usr/bin/env bash
# A/B: kafka-shell built from two git revisions, side by side on this machine, same ProducerPerformance commands as
# produce-consume.sh (1 KiB records, acks=all, linger.ms=5, batch.size=131072, 1 partition, loopback). For a change
# that must not cost speed (a refactoring) or that claims to gain it (an optimisation).
#   benchmarks/compare/shell-ab.sh                      # BASE=HEAD~1 ROUNDS=3 RECORDS=200000 RATE_SECONDS=20
#   BASE=a432043 benchmarks/compare/shell-ab.sh         # the working tree against a432043
#   BASE=HEAD HEAD_ENV=KAFKA_SHELL_GC=-XX:+UseZGC benchmarks/compare/shell-ab.sh   # one revision, two JVM settings
# BASE_ENV / HEAD_ENV: space-separated VAR=value assignments for that side's bin/kafka-shell (KAFKA_SHELL_GC,
# KAFKA_SHELL_JAVA_OPTS, KAFKA_SHELL_HEAP...), printed with the table. BASE_ARGS / HEAD_ARGS: extra arguments of that
# side's bin/kafka-shell, e.g. HEAD_ARGS="--override s3stream.object.store=file:///dev/shm/ab-objects". STORE=minio
# starts one MinIO and puts each shell's objects in it (s3://bench/ab-base and s3://bench/ab-head) instead of file://.
# PRODUCER_PROPS: more properties for every producer, both sides (e.g. "compression.type=lz4"), printed with the table.
# WARMUP_RUNS (default 0): unthrottled runs of RECORDS into each shell before the first round, not reported: a fresh
# shell's CPU per run falls 2-2.5x over its first few million records as the JIT compiles (benchmarks/README.md,
# "Frames gathered once"), which hides a change of a few percent in the early rounds' medians.
# A run during which the host stole more than MAX_RUN_STEAL_PCT percent of the CPU (default 5) goes to discarded.tsv
# and is run again, up to STEAL_RETRIES times (default 2; lib.sh's run_stolen).
# "base" is BASE exported (git archive) into .work/ab-base and built there (offline when the local repository has all);
# "head" is this working tree. Tests (TESTS, default "unthrottled rate10000"): unthrottled throughput; latency at a
# fixed 10,000 rec/s (rate10000) or 2,000 rec/s (rate2000); "consume": ConsumerPerformance reading that round's
# unthrottled topic from the beginning (list it after unthrottled: TESTS="unthrottled consume"; part of that topic may
# still be in the log cache, so this reads a mix of memory and objects); "backlog": ConsumerPerformance reading one
# topic of BACKLOG_RECORDS (default 2,000,000, 2 GB: far over the log cache, so every read comes from objects through
# the block cache) produced into each shell once before the first round, read whole in every round (TESTS=backlog
# alone measures the read path from objects: the fetch MB/s and the shell's CPU per read); "lookup": ListOffsets by
# timestamp in that backlog (kafka-get-offsets' GetOffsetShell --time at a quarter, half and three quarters of the
# backlog's production window; the median wall time of the three runs, beside one --time -1 run: the tool's own JVM
# start and connection, which every run pays). Both shells run for the
# whole script on their embedded default (wal-blockdev file + file:// objects); each round runs every (test, system)
# once, the order alternating per round; the table reports medians over rounds and the ratio head/base, with the CPU
# time each shell process used during each run (user + system, from /proc/<pid>/stat) and, for the 10,000 rec/s run,
# its threads' context switches (/proc/<pid>/task/*/status). Each tree's shell is trained an AOT cache first (if its
# revision has --train-aot; SHELL_AOT=0: neither uses one); BASE=HEAD BASE_ENV=KAFKA_SHELL_AOT_CACHE=/nonexistent
# measures the cache itself.
# Both shells run with s3stream.compaction.interval.ms=AB_COMPACTION_INTERVAL_MS (default 3600000: no compaction round
# during the script). On the 60-s default timer, the round that compacts the last unthrottled run's gigabyte (~0.5 s of
# CPU, ~10,000 context switches on the virtual-thread carriers) fell inside one side's 30-s rate runs more often than
# the other's, the two shells' timers being out of phase by their start times: an A/A run of one build read 0.85× the
# CPU and 0.77× the context switches at 10,000 rec/s (benchmarks/README.md, "Compaction rounds inside one side's rate
# runs"). AB_COMPACTION_INTERVAL_MS=60000 gives both the default back, for a change to compaction itself.
. "$(dirname "$0")/lib.sh"
BASE="${BASE:-HEAD~1}"
ROUNDS="${ROUNDS:-3}"
RECORDS="${RECORDS:-200000}"
RATE_SECONDS="${RATE_SECONDS:-20}"
BACKLOG_RECORDS="${BACKLOG_RECORDS:-2000000}"
read -r -a TESTS <<<"${TESTS:-unthrottled rate10000}"
if [[ " ${TESTS[*]} " == *" consume "* && " ${TESTS[*]} " != *" unthrottled "* ]]; then
  echo "TESTS: consume reads the topic unthrottled writes in the same round; add unthrottled before it" >&2
  exit 2
fi
BASE_PORT="${BASE_PORT:-29192}"

setup_kafka_tools
BASE_TREE="$WORK/ab-base"
base_rev="$(cd "$ROOT" && git rev-parse --short "$BASE")"
head_rev="$(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- . ':!benchmarks' || echo '+dirty')"
if [ "$(cat "$BASE_TREE/.rev" 2>/dev/null)" != "$base_rev" ]; then
  rm -rf "$BASE_TREE"; mkdir -p "$BASE_TREE"
  (cd "$ROOT" && git archive "$base_rev") | tar -x -C "$BASE_TREE"
  echo "$base_rev" >"$BASE_TREE/.rev"
fi
log "building base $base_rev in $BASE_TREE and head $head_rev"
# package, not install: each tree's bin/kafka-shell runs on its own reactor's jars, and the local repository keeps
# the working tree's snapshots.
(cd "$BASE_TREE" && { ./mvnw -q -B -o -pl kafka-shell -am -DskipTests package >/dev/null 2>&1 \
  || ./mvnw -q -B -pl kafka-shell -am -DskipTests package; } && touch kafka-shell/target/runtime-classpath.txt)
build_shell
train_aot "$BASE_TREE"
mkdir -p "$RUN"
: >"$RUN/perf.log"
TSV="$RUN/shell-ab.tsv"
HEADER='round\tsystem\ttest\tload\tsteal_s\trec_s\tmb_s\tavg_ms\tp50_ms\tp99_ms\tp999_ms\tcpu_ms\tctx_switches'
printf "$HEADER\\n" >"$TSV"
printf "$HEADER\\tsteal_pct\\n" >"$RUN/discarded.tsv"
machine | tee "$RUN/machine.txt" >&2

start_one() { # system root port dir [VAR=value ...] [extra arguments]
  rm -rf "$4"; mkdir -p "$4"
  DATA_DIRS+=("$4")
  # shellcheck disable=SC2086 # the assignments are meant to split
  env KAFKA_SHELL_HEAP="${KAFKA_SHELL_HEAP:-1g}" KAFKA_SHELL_DIRECT="${KAFKA_SHELL_DIRECT:-768m}" ${5:-} \
    "$2/bin/kafka-shell" --override listeners="PLAINTEXT://127.0.0.1:$3" \
    --override s3stream.data.dir="$4" --override group.initial.rebalance.delay.ms=0 \
    --override s3stream.compaction.interval.ms="${AB_COMPACTION_INTERVAL_MS:-3600000}" ${6:-} >"$4/shell.log" 2>&1 &
  PIDS+=($!)
  SHELL_PIDS[$1]=$!
  wait_port 127.0.0.1 "$3" 120 $! || { tail -20 "$4/shell.log" >&2; exit 1; }
  log "$1 ($2) up on 127.0.0.1:$3"
}
declare -A SHELL_PIDS=()
# CPU time (user + system, ms) the shell process has used so far: bin/kafka-shell execs the JVM, so $! is its pid.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$1/stat"; }
# Context switches (voluntary + involuntary) of the shell's live threads so far: each is a thread giving up or losing a
# core, and each wake-up after one may wait for a core; threads that exit during a run take theirs with them.
ctx_switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { printf "%d", n }'; }
if [ "${STORE:-file}" = minio ]; then
  start_minio "$RUN/minio"
  BASE_ARGS="--override s3stream.object.store=${S3_URI/\/s3stream\?//ab-base?} ${BASE_ARGS:-}"
  HEAD_ARGS="--override s3stream.object.store=${S3_URI/\/s3stream\?//ab-head?} ${HEAD_ARGS:-}"
fi
start_one base "$BASE_TREE" "$BASE_PORT" "$RUN/base" "${BASE_ENV:-}" "${BASE_ARGS:-}"
start_one head "$ROOT" "$SHELL_PORT" "$RUN/head" "${HEAD_ENV:-}" "${HEAD_ARGS:-}"
port() { case "$1" in base) echo "$BASE_PORT" ;; head) echo "$SHELL_PORT" ;; esac; }

SYSTEMS=(base head)
for ((w = 1; w <= ${WARMUP_RUNS:-0}; w++)); do
  for sys in "${SYSTEMS[@]}"; do
    create_topic "127.0.0.1:$(port "$sys")" "ab-warmup-$w"
    log "$sys: warm-up run $w (not reported): $(produce "127.0.0.1:$(port "$sys")" "ab-warmup-$w" "$RECORDS" -1 \
      $((RECORDS / 5)))"
  done
done
declare -A BACKLOG_FROM_MS=() BACKLOG_TO_MS=() UNTHROTTLED_TOPIC=()
if [[ " ${TESTS[*]} " == *" backlog "* || " ${TESTS[*]} " == *" lookup "* ]]; then
  for sys in "${SYSTEMS[@]}"; do
    create_topic "127.0.0.1:$(port "$sys")" ab-backlog
    BACKLOG_FROM_MS[$sys]="$(date +%s%3N)"
    log "$sys: backlog of $BACKLOG_RECORDS records: $(produce "127.0.0.1:$(port "$sys")" ab-backlog "$BACKLOG_RECORDS" -1 \
      $((BACKLOG_RECORDS / 5)))"
    BACKLOG_TO_MS[$sys]="$(date +%s%3N)"
  done
fi
# lookup bootstrap system: "median_ms latest_ms" of GetOffsetShell runs (see the header); the offsets found go to perf.log
lookup() {
  local bs="$1" sys="$2" from="${BACKLOG_FROM_MS[$2]}" to="${BACKLOG_TO_MS[$2]}" t0 ms=() latest
  for quarter in 1 2 3; do
    t0="$(date +%s%3N)"
    echo "$sys --time $((from + (to - from) * quarter / 4)): $(kt org.apache.kafka.tools.GetOffsetShell \
      --bootstrap-server "$bs" --topic ab-backlog --time $((from + (to - from) * quarter / 4)) 2>&1 | tail -1)" \
      >>"$RUN/perf.log"
    ms+=($(($(date +%s%3N) - t0)))
  done
  t0="$(date +%s%3N)"
  kt org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$bs" --topic ab-backlog --time -1 >>"$RUN/perf.log" 2>&1
  latest=$(($(date +%s%3N) - t0))
  printf '%s\n' "${ms[@]}" | sort -n | sed -n 2p | tr '\n' ' '
  echo "$latest"
}
for ((round = 1; round <= ROUNDS; round++)); do
  if ((round % 2)); then order=(base head); else order=(head base); fi
  for test in "${TESTS[@]}"; do
    for sys in "${order[@]}"; do
      bs="127.0.0.1:$(port "$sys")"
      # A run the host stole from is written to discarded.tsv and run again on its own topic (lib.sh's run_stolen).
      for ((attempt = 1; ; attempt++)); do
        topic="ab-$test-r$round"; ((attempt == 1)) || topic="ab-$test-r$round-a$attempt"
        [ "$test" = consume ] || [ "$test" = backlog ] || [ "$test" = lookup ] || create_topic "$bs" "$topic"
        [ "$test" = unthrottled ] && UNTHROTTLED_TOPIC[$sys]="$topic"
        quiet
        mark="$(steal_mark)" # its first field is steal_ticks' reading
        cpu0="$(cpu_ms "${SHELL_PIDS[$sys]}")"
        ctx0="$(ctx_switches "${SHELL_PIDS[$sys]}")"
        case "$test" in
          unthrottled) row="$(produce "$bs" "$topic" "$RECORDS" -1 $((RECORDS / 5)))" ;;
          rate2000) row="$(produce "$bs" "$topic" $((2000 * RATE_SECONDS)) 2000 $((2000 * 3)))" ;;
          rate10000) row="$(produce "$bs" "$topic" $((10000 * RATE_SECONDS)) 10000 $((10000 * 3)))" ;;
          consume)
            # shellcheck disable=SC2046 # two numbers: MB/s and rec/s
            set -- $(consume "$bs" "${UNTHROTTLED_TOPIC[$sys]}" "$RECORDS")
            row="$2 $1 - - - -" ;;
          backlog)
            # shellcheck disable=SC2046
            set -- $(consume "$bs" ab-backlog "$BACKLOG_RECORDS")
            row="$2 $1 - - - -" ;;
          lookup)
            # shellcheck disable=SC2046 # two numbers: the median lookup's ms and the latest lookup's
            set -- $(lookup "$bs" "$sys")
            row="- - $1 $2 - -" ;;
        esac
        cpu="$(( $(cpu_ms "${SHELL_PIDS[$sys]}") - cpu0 ))"
        ctx="$(( $(ctx_switches "${SHELL_PIDS[$sys]}") - ctx0 ))"
        line="$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$round" "$sys" "$test" "$LOAD" "$(steal_since "${mark%% *}")" \
          "$(tr ' ' '\t' <<<"$row")" "$cpu" "$ctx")"
        if run_stolen "$mark" "$attempt"; then
          printf '%s\t%s\n' "$line" "$STOLEN_PCT" >>"$RUN/discarded.tsv"
          log "round $round $test $sys: the host stole $STOLEN_PCT % of the CPU during the run: discarded, again"
          continue
        fi
        printf '%s\n' "$line" | tee -a "$TSV" >&2
        break
      done
    done
  done
done

# The table's header names each side's arguments, with any secretKey=... in a store URI masked.
masked() { sed -E 's/(secretKey=)[^& ]*/\1****/g' <<<"$1"; }
python3 - "$TSV" "$(masked "$base_rev${BASE_ENV:+ with $BASE_ENV}${BASE_ARGS:+ $BASE_ARGS}")" \
  "$(masked "$head_rev${HEAD_ENV:+ with $HEAD_ENV}${HEAD_ARGS:+ $HEAD_ARGS}")" "${PRODUCER_PROPS:-}" <<'PY'
import csv, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
base, head = sys.argv[2], sys.argv[3]
def med(sys_, test, col):
    v = [float(r[col]) for r in rows if r["system"] == sys_ and r["test"] == test and r[col] != "-"]
    return statistics.median(v) if v else float("nan")
loads = [float(r["load"]) for r in rows]
steals = [float(r["steal_s"]) for r in rows]
print(f"kafka-shell {head} (head) vs {base} (base), medians of {max(int(r['round']) for r in rows)} rounds; load during runs "
      f"{min(loads):.2f}-{max(loads):.2f}; CPU stolen by the host {min(steals):.1f}-{max(steals):.1f} s per run"
      + (f"; producers with {sys.argv[4]}" if sys.argv[4] else "")
      + f"; compaction every {os.environ.get('AB_COMPACTION_INTERVAL_MS', '3600000')} ms on both")
print("| test | base | head | head / base |")
print("|---|---:|---:|---:|")
for test, col, label in [("unthrottled", "rec_s", "unthrottled, rec/s"), ("unthrottled", "p99_ms", "unthrottled p99 ms"),
                         ("rate2000", "p50_ms", "2,000 rec/s: p50 ms"), ("rate2000", "p99_ms", "2,000 rec/s: p99 ms"),
                         ("rate2000", "p999_ms", "2,000 rec/s: p99.9 ms"),
                         ("rate10000", "p50_ms", "10,000 rec/s: p50 ms"), ("rate10000", "p99_ms", "10,000 rec/s: p99 ms"),
                         ("rate10000", "p999_ms", "10,000 rec/s: p99.9 ms"), ("consume", "rec_s", "consumer, rec/s"),
                         ("consume", "mb_s", "consumer, MB/s"), ("backlog", "mb_s", "consumer of the backlog, MB/s"), ("unthrottled", "cpu_ms", "shell CPU ms, unthrottled run"),
                         ("rate2000", "cpu_ms", "shell CPU ms, 2,000 rec/s run"),
                         ("rate10000", "cpu_ms", "shell CPU ms, 10,000 rec/s run"),
                         ("rate10000", "ctx_switches", "shell context switches, 10,000 rec/s run"),
                         ("consume", "cpu_ms", "shell CPU ms, consumer run"),
                         ("backlog", "cpu_ms", "shell CPU ms, backlog read"),
                         ("lookup", "avg_ms", "ListOffsets by timestamp in the backlog, ms per CLI run"),
                         ("lookup", "p50_ms", "ListOffsets latest, ms per CLI run (the tool's fixed cost)"),
                         ("lookup", "cpu_ms", "shell CPU ms, four lookups")]:
    b, h = med("base", test, col), med("head", test, col)
    if b != b:  # NaN: test not run
        continue
    print(f"| {label} | {b:,.1f} | {h:,.1f} | {h / b:.2f}× |")
PY
plot "$TSV" "$RUN/shell-ab.svg" "kafka-shell A/B, base $base_rev vs head $head_rev, 1 KiB records, acks=all"
