"""What kafka-shell saw of one catch-up-anatomy.sh run: catch_up_anatomy.py RUN_DIR NAME GC_LOG.

Reads RUN_DIR/NAME.0.* and RUN_DIR/NAME.1.* (snapshots before and after the run) and prints four lines: the shell's
produce latency percentiles (bucket upper bounds of the Prometheus histogram), its GC pauses between the two times,
the threads that waited longest for a core, and the machine's CPU pressure (PSI "some": the share of the run in which
at least one runnable task waited for a core) when /proc/pressure/cpu exists.
"""
import collections
import re
import sys


def histogram(path):
    buckets = {}
    for line in open(path):
        m = re.search(r'le="([^"]+)"[^}]*} ([0-9.eE+]+)', line)
        if m:
            buckets[float(m.group(1))] = float(m.group(2))  # float('+Inf') parses
    return buckets


def percentiles(before, after):
    cumulative = [(le, after[le] - before.get(le, 0)) for le in sorted(after)]
    total = cumulative[-1][1] if cumulative else 0
    out = []
    for q in (0.5, 0.99, 0.999):
        le = next((le for le, c in cumulative if c >= q * total), None)
        out.append('p%g <= %.1f ms' % (q * 100, le * 1000) if le is not None else 'p%g -' % (q * 100))
    return 'shell produce latency (%d requests): %s' % (total, ', '.join(out))


def gc_pauses(gc_log, start_ms, end_ms):
    pauses, heap = [], '-'
    for line in open(gc_log):
        m = re.match(r'\[(\d+)ms\].*Pause (\S+).* (\S+->\S+) ([0-9.]+)ms', line)
        if m and start_ms <= int(m.group(1)) <= end_ms:
            pauses.append(float(m.group(4)))
            if m.group(2) == 'Young':
                heap = m.group(3)
    if not pauses:
        return 'GC: no pause'
    return 'GC: %d pauses, %.0f ms in all, longest %.1f ms; heap at the last young pause %s' % (
        len(pauses), sum(pauses), max(pauses), heap)


def threads(path):
    by_name = collections.defaultdict(lambda: [0, 0])
    for line in open(path):
        name, _, stat = line.rstrip('\n').partition('\t')
        if stat:
            cpu, wait, _ = (int(x) for x in stat.split())
            key = re.sub(r'[-#]?\d+$', '', name).strip()  # one row per pool: "ForkJoinPool-1-worker-3" -> its pool
            by_name[key][0] += cpu
            by_name[key][1] += wait
    return by_name


def waits(before, after):
    rows = [(name, after[name][0] - before[name][0], after[name][1] - before[name][1]) for name in after]
    rows.sort(key=lambda r: -r[2])
    return 'run-queue wait (CPU) ms: ' + ', '.join(
        '%s %d (%d)' % (name, wait / 1e6, cpu / 1e6) for name, cpu, wait in rows[:6])


def pressure(a, b, elapsed_ms):
    try:
        stalled_us = int(open(b + '.psi').read()) - int(open(a + '.psi').read())
    except (OSError, ValueError):
        return 'CPU pressure: - (no /proc/pressure/cpu)'
    return 'CPU pressure (some task waiting for a core): %.0f %% of the run' % (stalled_us / (10.0 * elapsed_ms))


def main():
    run, name, gc_log = sys.argv[1:4]
    a, b = '%s/%s.0' % (run, name), '%s/%s.1' % (run, name)
    print(percentiles(histogram(a + '.hist'), histogram(b + '.hist')))
    start_ms, end_ms = int(open(a + '.time').read()), int(open(b + '.time').read())
    print(gc_pauses(gc_log, start_ms, end_ms))
    print(waits(threads(a + '.sched'), threads(b + '.sched')))
    print(pressure(a, b, end_ms - start_ms))


if __name__ == '__main__':
    main()
