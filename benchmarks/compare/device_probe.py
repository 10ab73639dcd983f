"""Disk probe: small synchronous direct writes at a fixed rate, each one timed, until SIGTERM.

Usage: device_probe.py FILE LOG [RATE]  (RATE writes per second, default 50)

Writes 4 KiB with O_DIRECT|O_DSYNC (every write reaches the device and is flushed before it returns, as a WAL's
does) in turn over a 64 MiB file it fills first, one write due every 1/RATE s on a fixed schedule. LOG gets one line
per write slower than 2 ms: "start_epoch_us latency_us". A write that stalls shows what every flushed write on that
device waited at that moment; device-stalls.sh lays these beside a producer's slow records.
"""
import mmap
import os
import signal
import sys
import time

path, log = sys.argv[1], sys.argv[2]
rate = int(sys.argv[3]) if len(sys.argv) > 3 else 50
size, block = 64 << 20, 4096
if not os.path.exists(path) or os.path.getsize(path) < size:
    with open(path, "wb") as f:  # written whole: a synchronous write into an unwritten extent costs more
        f.write(os.urandom(size))
        os.fsync(f.fileno())
fd = os.open(path, os.O_RDWR | os.O_DIRECT | os.O_DSYNC)
buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT needs
buf.write(os.urandom(block))
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)
out = open(log, "w", buffering=1)
start = time.perf_counter()
epoch_offset_us = time.time() * 1e6 - start * 1e6
i = offset = 0
while not stop:
    delay = start + i / rate - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    t = time.perf_counter()
    os.pwrite(fd, buf, offset)
    latency_us = (time.perf_counter() - t) * 1e6
    if latency_us > 2000:
        out.write(f"{int(t * 1e6 + epoch_offset_us)} {int(latency_us)}\n")
    offset = (offset + block) % size
    i += 1
out.close()
