package io.s3stream.internal.manifest;

import io.s3stream.internal.metadata.ManifestOp;
import io.s3stream.internal.metadata.ManifestState;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamRange;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a long-lived manifest holds and costs as hours of a steady workload go by (a main method, not a test): the
 * manifest's own rules ({@link ManifestState}) driven through the operations a node sends, on a simulated clock, so a
 * day takes seconds. The model, per node: {@code streams} streams; an upload every 5 s commits one stream set object
 * holding 100 new offsets of every stream; every minute a compaction replaces that minute's 12 stream set objects by
 * one stream object per stream, each stream is trimmed to its last hour (retention), and the objects first seen marked
 * for deletion a minute earlier are recorded as deleted (the compactor's grace period). Real compaction also merges
 * stream objects, which this model leaves out: it under-counts objects, never over-counts them.
 *
 * <p>Every {@code reportHours} it prints the objects the manifest holds (by state), the checkpoint's size (what a
 * node writes every {@code checkpointEvery} entries and every node reads at start-up), the time to encode it and to
 * decode and restore it, and the time to list the objects marked for deletion (what every compaction round does);
 * the times are single samples. Usage: {@code java -Xmx2g -cp
 * benchmarks/target/benchmarks.jar io.s3stream.internal.manifest.ManifestHistoryBenchmark [streams=100] [hours=24]
 * [reportHours=6]}.
 */
public final class ManifestHistoryBenchmark {
    private static final long NODE = 1;
    private static final long NODE_EPOCH = 1;
    private static final Duration UPLOAD_EVERY = Duration.ofSeconds(5);
    private static final int UPLOADS_PER_MINUTE = 12;
    private static final long OFFSETS_PER_UPLOAD = 100;
    private static final Duration RETENTION = Duration.ofHours(1);
    private static final long TTL_NANOS = Duration.ofMinutes(10).toNanos();

    private ManifestHistoryBenchmark() {
    }

    /** The simulated time: operations apply at it, and the manifest's reads ask it. */
    private static final class SimulatedClock implements InstantSource {
        private Instant now = Instant.parse("2026-01-01T00:00:00Z");

        @Override
        public Instant instant() {
            return now;
        }

        void advance(Duration d) {
            now = now.plus(d);
        }
    }

    public static void main(String[] args) {
        int streams = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        int hours = args.length > 1 ? Integer.parseInt(args[1]) : 24;
        int reportHours = args.length > 2 ? Integer.parseInt(args[2]) : 6;
        SimulatedClock clock = new SimulatedClock();
        ManifestState m = new ManifestState(clock);
        apply(m, clock, new ManifestOp.RegisterNode(NODE));
        for (int s = 0; s < streams; s++) {
            apply(m, clock, new ManifestOp.CreateStream(NODE, NODE_EPOCH, 0, Map.of()));
        }
        System.out.printf("%d streams, an upload every %d s, a compaction, trim and deletion round every minute, %d h"
                + " retention%n", streams, UPLOAD_EVERY.toSeconds(), RETENTION.toHours());
        System.out.println("hour\tobjects held\tcommitted\tmarked\tdeleted\tcheckpoint KiB\tencode ms"
                + "\tdecode+restore ms\tlist marked ms");
        long end = 0;
        List<Long> minuteInputs = new ArrayList<>();
        Map<Long, Instant> firstSeenMarked = new HashMap<>();
        long minutes = hours * 60L;
        for (long minute = 1; minute <= minutes; minute++) {
            long minuteStart = end;
            for (int u = 0; u < UPLOADS_PER_MINUTE; u++) {
                clock.advance(UPLOAD_EVERY);
                long id = (Long) apply(m, clock, new ManifestOp.PrepareObjects(1, TTL_NANOS));
                List<StreamRange> ranges = new ArrayList<>(streams);
                for (long s = 0; s < streams; s++) {
                    ranges.add(new StreamRange(s, 0, end, end + OFFSETS_PER_UPLOAD));
                }
                end += OFFSETS_PER_UPLOAD;
                apply(m, clock, new ManifestOp.CommitObjects(new CommitRequest(NODE, NODE_EPOCH, List.of(
                        new CommitRequest.NewObject(id, ObjectType.STREAM_SET, 64L << 20, ranges)), List.of(),
                        end)));
                minuteInputs.add(id);
            }
            long first = (Long) apply(m, clock, new ManifestOp.PrepareObjects(streams, TTL_NANOS));
            List<CommitRequest.NewObject> outputs = new ArrayList<>(streams);
            for (long s = 0; s < streams; s++) {
                outputs.add(new CommitRequest.NewObject(first + s, ObjectType.STREAM, 8L << 20,
                        List.of(new StreamRange(s, 0, minuteStart, end))));
            }
            apply(m, clock, new ManifestOp.CommitObjects(new CommitRequest(NODE, NODE_EPOCH, outputs,
                    List.copyOf(minuteInputs))));
            minuteInputs.clear();
            long keepFrom = Math.max(0, end - RETENTION.toMinutes() * UPLOADS_PER_MINUTE * OFFSETS_PER_UPLOAD);
            for (long s = 0; s < streams; s++) {
                apply(m, clock, new ManifestOp.TrimStream(s, 0, keepFrom));
            }
            deleteDue(m, clock, firstSeenMarked);
            if (minute % (reportHours * 60L) == 0) {
                report(m, minute / 60);
            }
        }
    }

    /** The compactor's deletion: objects seen marked for a minute are deleted and recorded, the rest remembered. */
    private static void deleteDue(ManifestState m, SimulatedClock clock, Map<Long, Instant> firstSeenMarked) {
        Instant now = clock.instant();
        List<Long> due = new ArrayList<>();
        for (ObjectMetadata o : m.listObjects(ObjectState.MARKED_FOR_DELETION)) {
            Instant seen = firstSeenMarked.putIfAbsent(o.objectId(), now);
            if (seen != null && !seen.plus(Duration.ofMinutes(1)).isAfter(now)) {
                due.add(o.objectId());
            }
        }
        if (!due.isEmpty()) {
            apply(m, clock, new ManifestOp.ObjectsDeleted(due));
            due.forEach(firstSeenMarked::remove);
        }
    }

    private static void report(ManifestState m, long hour) {
        Map<ObjectState, Integer> byState = new HashMap<>();
        for (ObjectMetadata o : m.listObjects()) {
            byState.merge(o.state(), 1, Integer::sum);
        }
        long t0 = System.nanoTime();
        byte[] checkpoint = ManifestFormat.encodeCheckpoint(new ManifestFormat.Checkpoint(1, Instant.EPOCH,
                m.snapshot()));
        long t1 = System.nanoTime();
        ManifestState.restore(ManifestFormat.decodeCheckpoint(checkpoint, "checkpoint", 1).snapshot(),
                InstantSource.system());
        long t2 = System.nanoTime();
        int marked = m.listObjects(ObjectState.MARKED_FOR_DELETION).size();
        long t3 = System.nanoTime();
        System.out.printf("%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f%n", hour,
                byState.values().stream().mapToInt(Integer::intValue).sum(),
                byState.getOrDefault(ObjectState.COMMITTED, 0), marked,
                byState.getOrDefault(ObjectState.DELETED, 0), checkpoint.length / 1024.0, (t1 - t0) / 1e6,
                (t2 - t1) / 1e6, (t3 - t2) / 1e6);
    }

    private static Object apply(ManifestState m, SimulatedClock clock, ManifestOp op) {
        return m.apply(op, clock.instant());
    }
}
