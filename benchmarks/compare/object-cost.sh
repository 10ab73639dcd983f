#!/usr/bin/env bash
# Object-store cost of kafka-shell: requests and bytes per GiB ingested (ProducerPerformance, 1 KiB, acks=all,
# linger.ms=5, batch.size=131072, unthrottled) and per GiB of catch-up read (ConsumerPerformance from the beginning),
# from the library's own counters (kafka-shell's `s3stream.metrics.log.interval.ms` line). Before compaction.
#   benchmarks/compare/object-cost.sh            # MIB=1024 STORE=auto (minio when the s3:// store exists, else file)
# Counts include the manifest's own objects (the default metadata store lives in the object store).
. "$(dirname "$0")/lib.sh"
MIB="${MIB:-1024}"
STORE="${STORE:-auto}"

setup_kafka_tools
build_shell
mkdir -p "$RUN"
: >"$RUN/perf.log"
machine | tee "$RUN/machine.txt" >&2
records=$((MIB * 1024))
args=(--override s3stream.metrics.log.interval.ms=1000)
used=file
if [ "$STORE" != file ]; then
  start_minio "$RUN/minio"
  if start_shell "$RUN/shell" "${args[@]}" --override "s3stream.object.store=$S3_URI"; then
    used=minio
  else
    [ "$STORE" = minio ] && { log "kafka-shell cannot use s3:// (see $RUN/shell/shell.log)"; exit 1; }
    log "kafka-shell has no s3:// object store yet: falling back to file://"
  fi
fi
[ "$used" = file ] && start_shell "$RUN/shell" "${args[@]}"
SLOG="$RUN/shell/shell.log"
snapshot() { sleep 1.5; grep '^kafka-shell metrics:' "$SLOG" | tail -1; }

bs="127.0.0.1:$SHELL_PORT"
create_topic "$bs" cost
quiet; load0="$LOAD"
m0="$(snapshot)"
log "ingesting $MIB MiB (load $load0)"
produce "$bs" cost "$records" -1 0 >/dev/null
sleep 15 # upload interval 10 s: everything acknowledged is in objects
m1="$(snapshot)"
quiet; load1="$LOAD"
log "catch-up read of $MIB MiB (load $load1)"
consume "$bs" cost "$records" >/dev/null
m2="$(snapshot)"
cleanup
printf '%s\n%s\n%s\n' "$m0" "$m1" "$m2" >"$RUN/object-cost.metrics"
python3 - "$used" "$MIB" "$load0" "$load1" "$RUN/object-cost.metrics" "$RUN/shell/objects" <<'PY'
import sys
import glob, os
store, l0, l1, path, objects = sys.argv[1], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
snaps = []
for line in open(path):
    kv = dict(p.split("=", 1) for p in line.split(":", 1)[1].split())
    snaps.append({k: int(v) for k, v in kv.items()})
def delta(a, b):
    return {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b)}
ingest, read = delta(snaps[0], snaps[1]), delta(snaps[1], snaps[2])
ingested_gib = ingest["appendedBytes"] / 2**30
read_gib = read["bytesIn"] / 2**30
print(f"\nobject store: {store}; {ingested_gib:.2f} GiB appended (payload), load {l0} / {l1}\n")
print("| per GiB | PUT (incl. parts) | GET | other requests | bytes out (GiB) | bytes in (GiB) | objects uploaded |")
print("|---|---:|---:|---:|---:|---:|---:|")
def row(name, d, per):
    puts = d.get("req.PUT", 0) + d.get("req.PART", 0)
    gets = d.get("req.GET", 0)
    other = sum(v for k, v in d.items() if k.startswith("req.") and k not in ("req.PUT", "req.PART", "req.GET"))
    print(f"| {name} | {puts / per:.1f} | {gets / per:.1f} | {other / per:.1f} | {d['bytesOut'] / 2**30 / per:.2f} | "
          f"{d['bytesIn'] / 2**30 / per:.2f} | {d['uploadedObjects'] / per:.1f} |")
row("ingested", ingest, ingested_gib)
row("read back (catch-up)", read, ingested_gib)
others = {k: v for k, v in ingest.items() if k.startswith("req.") and v}
print(f"\ningest requests by kind (absolute): {others}")
# The manifest (the default metadata store, in the same object store) is opened on the raw store, so the engine's
# counters miss its requests. With file:// its objects can be counted by modification time instead.
if store == "file":
    ts = [int(l.split("timeMs=")[1].split()[0]) / 1000 for l in open(path)]
    phase = [0, 0, 0]
    for f in glob.glob(os.path.join(objects, "manifest", "**", "*"), recursive=True):
        if os.path.isfile(f):
            m = os.path.getmtime(f)
            if ts[0] < m <= ts[1]:
                phase[0] += 1
            elif ts[1] < m <= ts[2]:
                phase[1] += 1
    print(f"manifest objects written (not in the counters above; conditional creates): {phase[0] / ingested_gib:.1f} "
          f"per GiB ingested, {phase[1] / ingested_gib:.1f} per GiB read back")
print(f"catch-up: block cache hits {read['blockCacheHits']}, misses {read['blockCacheMisses']}, "
      f"{read_gib:.2f} GiB read from the store for {ingested_gib:.2f} GiB consumed")
PY
