package io.s3stream.internal.metadata;

import io.s3stream.StreamOptions;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectMetadata;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamRange;
import io.s3stream.testing.MetadataStoreContractTest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.InstantSource;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/** Runs the metadata contract against {@link InMemoryMetadataStore}, plus what only the in-memory store promises. */
class InMemoryMetadataStoreTest extends MetadataStoreContractTest {

    @Override
    protected MetadataStore createStore(InstantSource clock) {
        return new InMemoryMetadataStore(clock);
    }

    /** 100k objects: lookups and trims use the per-stream index instead of scanning every object. */
    @Test
    void hundredThousandObjectsStayCheap() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            int streams = 10;
            int perStream = 10_000;
            long[] ids = new long[streams];
            for (int i = 0; i < streams; i++) {
                ids[i] = join(store.createStream(NODE_A, epochA, StreamOptions.defaults())).streamId();
            }
            long first = join(store.prepareObjects(streams * perStream, TTL));
            long next = first;
            for (int u = 0; u < perStream; u++) {
                for (long s : ids) {
                    StreamRange r = new StreamRange(s, 0, u * 10L, u * 10L + 10);
                    join(store.commitObjects(new CommitRequest(NODE_A, epochA,
                            List.of(new CommitRequest.NewObject(next++, ObjectType.STREAM, 1, List.of(r))), List.of())));
                }
            }
            for (int probe = 0; probe < 100_000; probe++) {
                long s = ids[probe % streams];
                long offset = (probe * 7919L) % (perStream * 10L);
                List<ObjectMetadata> found = join(store.getObjects(s, offset, offset + 25, 2));
                long overlapping = (Math.min(offset + 25, perStream * 10L) - 1) / 10 - offset / 10 + 1;
                assertEquals(Math.min(2, overlapping), found.size(), "at " + offset);
                assertEquals(offset / 10 * 10, found.getFirst().rangeOf(s).orElseThrow().startOffset());
            }
            for (long s : ids) {
                join(store.trimStream(s, 0, perStream * 5L));
            }
            assertEquals(streams * perStream / 2, join(store.listObjects(ObjectState.MARKED_FOR_DELETION)).size());
        });
    }
}
