#!/usr/bin/env python3
"""Plots a comparison script's TSV (one row per round and system): the median p50/p99/p99.9 latency per system, and
the throughput of every round, so that the spread between rounds is visible next to the medians.

    benchmarks/compare/plot.py <results.tsv> <out.svg> [title]

The TSV needs the columns round, rec_s, p50_ms, p99_ms, p999_ms and one or two key columns naming the system
(system and test as written by shell-ab.sh and produce-consume.sh; wal as written by shell-wal.sh). fio.sh's TSV
(columns job, mb_s, iops) gets its own picture: the median MB/s of every fio job and WAL configuration side by side,
the spread between rounds as error bars; soak.sh's samples (column rss_mb) one panel per resource over time. Needs matplotlib (pip install matplotlib; bin/test's virtual environment
does not include it).
"""
import csv
import statistics
import sys

import matplotlib

matplotlib.use('svg')
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import MaxNLocator  # noqa: E402


def fio(rows, out, title):
    """fio.sh: MB/s per job (fio: the device; wal-*: WalAppendBenchmark), medians with min-max over rounds."""
    jobs = list(dict.fromkeys(r['job'] for r in rows))
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(jobs) + 2))
    for i, job in enumerate(jobs):
        vals = sorted(float(r['mb_s']) for r in rows if r['job'] == job)
        med = statistics.median(vals)
        wal = job.startswith('wal-')
        ax.barh(i, med, xerr=[[med - vals[0]], [vals[-1] - med]], color='tab:orange' if wal else 'tab:blue',
                label=None)
        ax.text(vals[-1], i, '  %s MB/s' % format(med, ',.0f'), va='center', fontsize=7)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color='tab:blue', label='fio, O_DIRECT|O_DSYNC sequential writes'),
                       Patch(color='tab:orange', label='wal-blockdev (WalAppendBenchmark)')],
              fontsize=8, loc='upper center', bbox_to_anchor=(0.5, -0.12), ncol=2)
    ax.set_yticks(range(len(jobs)), jobs, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale('log')
    ax.set_xlabel('MB/s (median over rounds; bars: min-max)')
    ax.set_xlim(right=ax.get_xlim()[1] * 2)  # room for the labels
    loads = [float(r['load']) for r in rows if r.get('load')]
    fig.suptitle('%s (load %.2f-%.2f)' % (title, min(loads), max(loads)) if loads else title)
    fig.tight_layout()
    fig.savefig(out)


def soak(rows, out, title):
    """soak.sh: the shell's resources over the run, one panel each."""
    minutes = [float(r['minute']) for r in rows]
    panels = (('rss_mb', 'RSS, MiB'), ('cache_mb', 'engine caches (direct), MiB'), ('threads', 'threads'),
              ('fds', 'open files'), ('manifest_kb', 'manifest, KiB'), ('objects_mb', 'objects, MiB'))
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5))
    for ax, (col, label) in zip(axes.flat, panels):
        ax.plot(minutes, [float(r[col]) if r[col] not in ('', 'NaN', 'nan') else float('nan') for r in rows],
                linewidth=1)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel('minute', fontsize=8)
        ax.set_ylim(bottom=0)
        ax.axvspan(0, max(minutes) / 3, color='0.92', zorder=0)  # warm-up, not judged
    fig.suptitle(title + ' (grey: warm-up, not judged for growth)')
    fig.tight_layout()
    fig.savefig(out)


def main(tsv, out, title):
    with open(tsv) as f:
        raw = list(csv.DictReader(f, delimiter='\t'))
    if raw and 'job' in raw[0] and 'mb_s' in raw[0]:
        return fio(raw, out, title)
    if raw and 'rss_mb' in raw[0]:
        return soak(raw, out, title)
    with open(tsv) as f:
        # Rows without latencies (produce-consume's consume test) are left out.
        rows = [r for r in csv.DictReader(f, delimiter='\t')
                if all(r.get(c) not in (None, '', '-') for c in ('rec_s', 'p50_ms', 'p99_ms', 'p999_ms'))]
    if not rows:
        print('plot.py: no rows with latencies in %s (a consumer-only run): no plot' % tsv, file=sys.stderr)
        return
    keys = [k for k in ('test', 'system', 'wal') if k in rows[0]]
    def key(r):
        return ' / '.join(r[k] for k in keys)
    systems = sorted({key(r) for r in rows})
    fig, (lat, thr) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / 3
    for i, (col, label) in enumerate((('p50_ms', 'p50'), ('p99_ms', 'p99'), ('p999_ms', 'p99.9'))):
        medians = [statistics.median(float(r[col]) for r in rows if key(r) == s) for s in systems]
        bars = lat.bar([x + (i - 1) * width for x in range(len(systems))], medians, width, label=label)
        lat.bar_label(bars, fmt='%g', fontsize=7)
    lat.set_xticks(range(len(systems)), systems, rotation=20, ha='right', fontsize=8)
    lat.set_ylabel('latency, ms (median over rounds)')
    lat.set_yscale('log')
    lat.legend()
    for s in systems:
        pts = sorted((int(r['round']), float(r['rec_s'])) for r in rows if key(r) == s)
        thr.plot([p[0] for p in pts], [p[1] for p in pts], marker='o', label=s)
    thr.xaxis.set_major_locator(MaxNLocator(integer=True))
    thr.set_xlabel('round')
    thr.set_ylabel('records/s')
    thr.set_ylim(bottom=0)
    thr.legend(fontsize=7)
    loads = [float(r['load']) for r in rows if r.get('load')]
    fig.suptitle('%s (load %.2f-%.2f)' % (title, min(loads), max(loads)) if loads else title)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == '__main__':
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else sys.argv[1])
