#!/usr/bin/env bash
# Where a warm kafka-shell's CPU goes under produce-consume.sh's unthrottled producer: one command for the profile that
# earlier sessions took by hand. Starts bin/kafka-shell (embedded default unless SHELL_ARGS says otherwise) with
# -XX:+PreserveFramePointer, warms it with WARMUP_RUNS unthrottled runs of RECORDS (the JIT's first millions of records
# cost 2-2.5x the CPU of later ones), then samples it with `perf record -g` (software clock, FREQ Hz) over
# PROFILED_RUNS more, and prints:
#   - the measured runs' rec/s, the shell's CPU seconds per million records and its context switches per run;
#   - the share of the shell's samples per thread group (event loop, virtual-thread carriers, WAL conductor, WAL IO,
#     uploader, compiler, GC, ...), and kernel vs JVM-and-native code;
#   - the top frames by self samples (JIT symbols from `jcmd Compiler.perfmap`).
#   benchmarks/compare/profile-shell.sh                # PARTITIONS=1 RECORDS=1000000 WARMUP_RUNS=3 PROFILED_RUNS=2
#   PARTITIONS=16 benchmarks/compare/profile-shell.sh
#   SHELL_ARGS="--override s3stream.object.store=file:///dev/shm/objects" benchmarks/compare/profile-shell.sh
# perf.data, the perf map and the full reports stay under .work/run/profile-shell/ (perf report -i ... to dig).
# Needs perf (Debian's linux-perf); installs it when missing.
. "$(dirname "$0")/lib.sh"
PARTITIONS="${PARTITIONS:-1}"
RECORDS="${RECORDS:-1000000}"
WARMUP_RUNS="${WARMUP_RUNS:-3}"
PROFILED_RUNS="${PROFILED_RUNS:-2}"
FREQ="${FREQ:-997}"
TOP="${TOP:-40}"

command -v perf >/dev/null 2>&1 || { log "installing perf"; apt-get update -qq && apt-get install -y -qq linux-perf; }
setup_kafka_tools
build_shell
mkdir -p "$RUN"
: >"$RUN/perf.log"
machine | tee "$RUN/machine.txt" >&2
# shellcheck disable=SC2086 # SHELL_ARGS is meant to split
KAFKA_SHELL_JAVA_OPTS="-XX:+PreserveFramePointer ${SHELL_JAVA_OPTS:-}" start_shell "$RUN/shell" ${SHELL_ARGS:-}
BS="127.0.0.1:$SHELL_PORT"

ctx_switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { printf "%d", n }'; }
run_one() { # label
  local topic="profile-$1-$(date +%s%N)" cpu0 ctx0 result
  PARTITIONS="$PARTITIONS" create_topic "$BS" "$topic"
  quiet
  cpu0="$(cpu_ticks "$SHELL_PID")"; ctx0="$(ctx_switches "$SHELL_PID")"
  result="$(produce "$BS" "$topic" "$RECORDS" -1 $((RECORDS / 5)))"
  local cpu ctx; cpu="$(ticks_s "$cpu0" "$(cpu_ticks "$SHELL_PID")")"; ctx=$(($(ctx_switches "$SHELL_PID") - ctx0))
  log "$1: $result; shell CPU $cpu s ($(awk -v c="$cpu" -v n="$RECORDS" 'BEGIN { printf "%.2f", c * 1e6 / n }') s per million records), $ctx context switches"
  printf '%s\t%s\t%s\t%s\n' "$1" "$(cut -d' ' -f1 <<<"$result")" "$cpu" "$ctx" >>"$RUN/runs.tsv"
}

printf 'run\trec_s\tshell_cpu_s\tctx_switches\n' >"$RUN/runs.tsv"
for ((w = 1; w <= WARMUP_RUNS; w++)); do run_one "warm-up-$w"; done
thread_switches() { # pid -> "comm<TAB>voluntary<TAB>involuntary" per thread
  for t in /proc/"$1"/task/*; do
    printf '%s\t%s\n' "$(cat "$t/comm" 2>/dev/null)" \
      "$(awk '/^voluntary_ctxt_switches/ { v = $2 } /^nonvoluntary_ctxt_switches/ { n = $2 } END { print v "\t" n }' "$t/status" 2>/dev/null)"
  done
}
thread_switches "$SHELL_PID" >"$RUN/switches-before.tsv"
rm -f "$RUN/perf.data"
perf record -g -F "$FREQ" -p "$SHELL_PID" -o "$RUN/perf.data" 2>>"$RUN/perf-record.log" &
PERF_PID=$!
sleep 1
for ((p = 1; p <= PROFILED_RUNS; p++)); do run_one "profiled-$p"; done
kill -INT "$PERF_PID"; wait "$PERF_PID" || true
thread_switches "$SHELL_PID" >"$RUN/switches-after.tsv"
"$JAVA_HOME/bin/jcmd" "$SHELL_PID" Compiler.perfmap >/dev/null # /tmp/perf-<pid>.map: names for JIT-compiled frames
stop_pid "$SHELL_PID"

perf report -i "$RUN/perf.data" --stdio --no-children -g none --sort comm --percent-limit 0.2 2>/dev/null \
  >"$RUN/by-thread.txt"
perf report -i "$RUN/perf.data" --stdio --no-children -g none --sort dso,sym --percent-limit 0.05 2>/dev/null \
  >"$RUN/by-symbol.txt"
perf script -i "$RUN/perf.data" -F comm,ip,sym 2>/dev/null >"$RUN/samples.txt"
python3 - "$RUN" "$TOP" <<'PY'
import collections
import re, sys, csv
run, top = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(f"{run}/runs.tsv"), delimiter="\t"))
prof = [r for r in rows if r["run"].startswith("profiled")]
for r in prof:
    print(f"{r['run']}: {float(r['rec_s']):,.0f} rec/s, shell {float(r['shell_cpu_s']):.2f} s CPU, {int(r['ctx_switches']):,} context switches")
line = re.compile(r"^\s*([\d.]+)%\s+(.*?)\s*$")
# Java names its threads; perf keeps the first 15 characters. Group them by role.
groups = [("event loops (Netty)", r"EventLoop|multiThreadIo|IoEventLoop"),
          ("virtual-thread carriers", r"ForkJoinPool|VirtualThread|carrier|kafka-shell-app"),
          ("WAL conductor", r"wal-co"), ("WAL IO threads", r"wal-io"),
          ("uploader", r"s3stream-upload"), ("compaction", r"compac"),
          ("C2 compiler", r"C2 Compiler"), ("C1 compiler", r"C1 Compiler"),
          ("GC", r"^G1 |GC Thread|G1 Conc|G1 Refine|G1 Service|G1 Main"), ]
totals = {}
threads = []
for l in open(f"{run}/by-thread.txt"):
    m = line.match(l)
    if not m:
        continue
    pct, comm = float(m.group(1)), m.group(2)
    threads.append((pct, comm))
    g = next((name for name, rx in groups if re.search(rx, comm)), "other")
    totals[g] = totals.get(g, 0) + pct
print("\nshare of the shell's samples by thread group:")
for g, pct in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"  {pct:5.1f} %  {g}")
print("  threads: " + ", ".join(f"{c} {p:.1f}" for p, c in sorted(threads, reverse=True)[:16]))
def switches(path):
    out = {}
    for l in open(path):
        parts = l.rstrip("\n").split("\t")
        if len(parts) == 3 and parts[1]:
            g = next((name for name, rx in groups if re.search(rx, parts[0])), "other")
            v, n = out.get(g, (0, 0))
            out[g] = (v + int(parts[1]), n + int(parts[2]))
    return out
before, after = switches(f"{run}/switches-before.tsv"), switches(f"{run}/switches-after.tsv")
runs = max(1, len(prof))
print("\ncontext switches per profiled run by thread group (voluntary + involuntary):")
for g in sorted(after, key=lambda g: -(after[g][0] + after[g][1] - sum(before.get(g, (0, 0))))):
    v = after[g][0] - before.get(g, (0, 0))[0]
    n = after[g][1] - before.get(g, (0, 0))[1]
    if v + n > 0:
        print(f"  {(v + n) / runs:9,.0f}  {g} ({v / runs:,.0f} + {n / runs:,.0f})")
kernel = 0.0
syms = []
for l in open(f"{run}/by-symbol.txt"):
    m = re.match(r"^\s*([\d.]+)%\s+(.+?)\s+\[(.)\]\s+(.*?)\s*$", l)
    if not m:
        continue
    pct, dso, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4)
    if kind == "k":
        kernel += pct
    syms.append((pct, dso, kind, sym))
print(f"\nkernel: {kernel:.1f} % of the shell's samples (symbols over 0.05 %)")
print(f"\ntop {top} frames by self samples ([k] kernel, [.] user; perf-<pid>.map = JIT-compiled Java):")
for pct, dso, kind, sym in syms[:top]:
    print(f"  {pct:5.2f} %  [{kind}] {sym[:110]}  ({dso})")
# The JIT's intrinsic stubs (arraycopy, CRC32C) by the Java method that called them: where the copies are.
samples, cur = [], None
for l in open(f"{run}/samples.txt"):
    if not l.strip():
        if cur:
            samples.append(cur)
        cur = None
    elif not l[0].isspace():
        cur = []
    elif cur is not None:
        cur.append(l.strip().split(" ", 1)[-1])
if cur:
    samples.append(cur)
stubs = collections.Counter()
for frames in samples:
    if frames and "StubRoutines" in frames[0]:
        caller = next((f for f in frames[1:] if "StubRoutines" not in f and "Interpreter" not in f
                       and not f.startswith(("java.nio.", "io.netty.buffer.", "void java.nio", "java.nio"))
                       and " java.nio." not in f and " io.netty.buffer." not in f), "?")
        stubs[caller] += 1
if samples:
    print(f"\nintrinsic stubs (copies, CRC32C): {100 * sum(stubs.values()) / len(samples):.1f} % of the samples, by caller:")
    for caller, k in stubs.most_common(12):
        print(f"  {100 * k / len(samples):5.2f} %  {caller[:140]}")
PY
log "perf data: $RUN/perf.data (perf report -i $RUN/perf.data), reports: $RUN/by-thread.txt, $RUN/by-symbol.txt"
