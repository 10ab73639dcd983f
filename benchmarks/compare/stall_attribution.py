"""Lays a producer's slow records beside a disk probe's stalls.

Usage: stall_attribution.py TIMELINE PROBE_LOG
TIMELINE: LatencyTimeline's "send_epoch_us latency_us" lines; PROBE_LOG: device_probe.py's lines of the same run.
Prints one line: "stalls10 stalls20 stall_max_ms slow10 slow10_in_stall slow20 slow20_in_stall", where stallsN is the
number of probe writes of at least N ms, slowN the number of records of at least N ms, and slowN_in_stall how many of
those were waiting (between send and acknowledgement) while a probe write of at least 10 ms was.
"""
import bisect
import sys

records = [tuple(map(int, line.split())) for line in open(sys.argv[1]) if line.strip()]
stalls = sorted(tuple(map(int, line.split())) for line in open(sys.argv[2]) if line.strip())
long_stalls = [(s, s + lat) for s, lat in stalls if lat >= 10_000]
starts = [s for s, _ in long_stalls]


def in_stall(sent, latency):
    """Whether [sent, sent + latency] overlaps a probe write of at least 10 ms."""
    acked = sent + latency
    i = bisect.bisect_right(starts, acked)  # stalls that began before the ack
    # Probe writes do not overlap each other (one at a time), so the latest few that began before the ack suffice.
    return any(end >= sent for _, end in long_stalls[max(0, i - 3):i])


out = [sum(lat >= 10_000 for _, lat in stalls), sum(lat >= 20_000 for _, lat in stalls),
       f"{max((lat for _, lat in stalls), default=0) / 1000:.1f}"]
for threshold in (10_000, 20_000):
    slow = [(s, lat) for s, lat in records if lat >= threshold]
    out += [len(slow), sum(in_stall(s, lat) for s, lat in slow)]
print(" ".join(map(str, out)))
