#!/usr/bin/env bash
# Runs every comparison in turn (each sets up, runs, tears down and prints its table); logs in .work/run-all-*.log.
cd "$(dirname "$0")"
mkdir -p .work
for s in object-cost produce-consume catch-up fio; do
  echo "== $s ($(date -u +%H:%MZ), load $(cut -d' ' -f1 /proc/loadavg))"
  ./$s.sh >".work/run-all-$s.log" 2>&1 && sed -n '/^$/,$p' ".work/run-all-$s.log" | grep -v SLF4J || { echo "$s failed:"; tail -20 ".work/run-all-$s.log"; }
done
