package io.s3stream.internal.manifest;

import io.s3stream.AppendResult;
import io.s3stream.FetchResult;
import io.s3stream.RecordBatch;
import io.s3stream.StoredBatch;
import io.s3stream.Stream;
import io.s3stream.StreamFencedException;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import io.s3stream.testing.EngineFixture;
import io.s3stream.testing.S3Server;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Two engines (nodes 1 and 2) on one MinIO prefix, each with its own WAL and no metadata URI, so both use the manifest
 * in the bucket: a stream moves from node 1 to node 2 with epoch fencing, and its data moves with it.
 */
class ManifestEngineMinioIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    private final EngineFixture fixture = new EngineFixture();
    private final String prefix = "manifest-engine-" + UUID.randomUUID();

    @AfterEach
    void close() {
        fixture.close();
    }

    private StreamStorage engine(long nodeId) {
        // metadata(null): not the fixture's in-memory store but the default, the manifest in the object store
        return fixture.open(nodeId, b -> b.objectStore(S3.uri(prefix)).metadata(null)
                .uploadInterval(Duration.ofSeconds(1)).backpressureTimeout(Duration.ofSeconds(30)));
    }

    private static byte[] payload(long offset) {
        byte[] b = new byte[1000 + (int) (offset % 3000)];
        new java.util.Random(offset).nextBytes(b);
        return b;
    }

    private static void append(Stream s, long expectedOffset) throws Exception {
        AppendResult r = s.append(RecordBatch.of(1, ByteBuffer.wrap(payload(expectedOffset)))).get(30, TimeUnit.SECONDS);
        assertThat(r.baseOffset()).isEqualTo(expectedOffset);
    }

    private static void readAll(Stream s, long end) throws Exception {
        long next = 0;
        while (next < end) {
            try (FetchResult r = s.fetch(next, Long.MAX_VALUE, 256 * 1024).get(30, TimeUnit.SECONDS)) {
                assertThat(r.batches()).as("fetch at %d", next).isNotEmpty();
                for (StoredBatch b : r.batches()) {
                    assertThat(b.baseOffset()).isEqualTo(next);
                    byte[] got = new byte[b.payload().remaining()];
                    b.payload().duplicate().get(got);
                    assertThat(got).as("offset %d", b.baseOffset()).isEqualTo(payload(b.baseOffset()));
                    next = b.endOffset();
                }
            }
        }
        assertThat(next).isEqualTo(end);
    }

    @Test
    void twoEnginesHandAStreamOverWithEpochFencing() throws Exception {
        StreamStorage one = engine(1);
        StreamStorage two = engine(2);
        Stream s = one.createStream(StreamOptions.defaults()).get(30, TimeUnit.SECONDS);
        for (int i = 0; i < 600; i++) { // ~1.7 MiB: more than the 1 MiB upload threshold, so some is in objects
            append(s, i);
        }
        assertThatThrownBy(() -> two.openStream(s.streamId(), 1).get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StreamFencedException.class).hasMessageContaining("node 1");
        s.close().get(30, TimeUnit.SECONDS); // uploads node 1's data of the stream and records its end offset

        Stream taken = two.openStream(s.streamId(), 1).get(30, TimeUnit.SECONDS);
        assertThat(taken.nextOffset()).isEqualTo(600);
        readAll(taken, 600); // all of it from objects: node 2 never saw these appends
        assertThat(two.metrics().objectStore().requests().get("GET")).isPositive();
        append(taken, 600);

        // The old owner cannot come back at its old epoch, nor take the stream while node 2 holds it.
        assertThatThrownBy(() -> one.openStream(s.streamId(), 0).get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StreamFencedException.class);
        assertThatThrownBy(() -> one.openStream(s.streamId(), 2).get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StreamFencedException.class).hasMessageContaining("node 2");

        taken.close().get(30, TimeUnit.SECONDS);
        Stream back = one.openStream(s.streamId(), 2).get(30, TimeUnit.SECONDS);
        assertThat(back.nextOffset()).isEqualTo(601);
        readAll(back, 601);
    }
}
