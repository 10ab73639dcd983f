#!/usr/bin/env python3
"""Resident memory of a kafka-shell while 40 clients each send the first 20 MiB of a 50 MiB frame and then stall
(issue 20, point 5): once with no request memory budget (queued.max.request.bytes=-1, Kafka's default) and once with
the given budgets. Needs `./mvnw -q -pl kafka-shell -am -DskipTests package` first.

    benchmarks/compare/connection-memory.py -1 134217728
"""
import os
import socket
import struct
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JAVA = os.environ.get('JAVA', '/usr/lib/jvm/temurin-25-jdk-amd64/bin/java')
CLIENTS, FRAME, SENT = 40, 50 << 20, 20


def rss_mb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS'):
                return int(line.split()[1]) // 1024


def run(budget, port):
    cp = os.path.join(ROOT, 'kafka-shell/target/classes') + ':' + open(
        os.path.join(ROOT, 'kafka-shell/target/runtime-classpath.txt')).read().strip()
    work = '/tmp/connection-memory-%d' % port
    subprocess.run(['rm', '-rf', work])
    os.makedirs(work)
    log = open(work + '/shell.log', 'w')
    shell = subprocess.Popen([JAVA, '--enable-native-access=ALL-UNNAMED', '-Xmx512m', '-XX:MaxDirectMemorySize=1g',
                              '-cp', cp, 'io.s3stream.kafka.shell.KafkaShell',
                              '--override', 'listeners=PLAINTEXT://127.0.0.1:%d' % port,
                              '--override', 's3stream.data.dir=' + work,
                              '--override', 's3stream.wal=blockdev://%s/wal.img?capacity=64MiB' % work,
                              '--override', 'queued.max.request.bytes=' + budget], stdout=log, stderr=subprocess.STDOUT)
    try:
        while 'listening' not in open(work + '/shell.log').read():
            time.sleep(0.2)
        time.sleep(2)
        before = rss_mb(shell.pid)

        def client():
            s = socket.create_connection(('127.0.0.1', port))
            s.settimeout(2)
            s.sendall(struct.pack('>i', FRAME))
            for _ in range(SENT):
                try:
                    s.sendall(b'\0' * (1 << 20))
                except OSError:
                    break  # the shell stopped reading (budget) or closed the connection
            time.sleep(30)
            s.close()

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        time.sleep(15)
        during = rss_mb(shell.pid)
        alive = shell.poll() is None
        for t in threads:
            t.join()
        print('queued.max.request.bytes=%s: RSS %d MB idle, %d MB with %d stalled %d MiB frames (%d MiB sent each);'
              ' shell alive: %s' % (budget, before, during, CLIENTS, FRAME >> 20, SENT, alive), flush=True)
    finally:
        shell.terminate()
        shell.wait()


if __name__ == '__main__':
    for i, b in enumerate(sys.argv[1:] or ['-1', '134217728']):
        run(b, 29500 + i)
