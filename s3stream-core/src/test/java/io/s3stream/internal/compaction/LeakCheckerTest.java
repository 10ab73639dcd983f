package io.s3stream.internal.compaction;

import io.netty.buffer.Unpooled;
import io.s3stream.StreamOptions;
import io.s3stream.internal.metadata.InMemoryMetadataStore;
import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.spi.CommitRequest;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectState;
import io.s3stream.spi.ObjectType;
import io.s3stream.spi.StreamRange;
import io.s3stream.testing.ManualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The leak checker against a manifest that forgets objects once their deletion is recorded: what vanished from the
 * manifest between its two reads was deleted meanwhile, not leaked; what the manifest does not know is.
 */
class LeakCheckerTest {
    private final ManualClock clock = new ManualClock();
    private MemObjectStore bucket;
    private InMemoryMetadataStore manifest;
    private long nodeEpoch;
    private long stream;

    @BeforeEach
    void setUp() {
        bucket = MemObjectStore.open("leak-checker-" + System.nanoTime(), 1024);
        manifest = new InMemoryMetadataStore(clock);
        nodeEpoch = manifest.registerNode(1).join();
        stream = manifest.createStream(1, nodeEpoch, StreamOptions.defaults()).join().streamId();
    }

    @AfterEach
    void tearDown() {
        manifest.close();
        bucket.close();
    }

    /** An object of 10 offsets at {@code start}, in the bucket and committed. */
    private long commit(long start) {
        long id = manifest.prepareObjects(1, Duration.ofMinutes(10)).join();
        bucket.put(ObjectKeys.dataKey(id), Unpooled.wrappedBuffer(new byte[16])).join();
        manifest.commitObjects(new CommitRequest(1, nodeEpoch, List.of(new CommitRequest.NewObject(id,
                ObjectType.STREAM, 16, List.of(new StreamRange(stream, 0, start, start + 10)))), List.of())).join();
        return id;
    }

    private void deleteAndRecord(long id) {
        bucket.delete(List.of(ObjectKeys.dataKey(id))).join();
        manifest.objectsDeleted(List.of(id)).join();
    }

    @Test
    void anObjectDeletedAndForgottenBetweenTheTwoReadsIsPendingNotLeaked() {
        long trimmed = commit(0);
        commit(10);
        manifest.trimStream(stream, 0, 10).join();
        assertThat(manifest.listObjects(ObjectState.MARKED_FOR_DELETION).join()).hasSize(1);

        // The compactor's deletion runs while the checker lists the bucket: the listing still has the key, the
        // manifest's second read no longer knows the object.
        AtomicInteger reads = new AtomicInteger();
        MetadataStore racing = (MetadataStore) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {MetadataStore.class}, (proxy, method, args) -> {
                    if (method.getName().equals("listObjects") && reads.incrementAndGet() == 2) {
                        deleteAndRecord(trimmed);
                    }
                    try {
                        return method.invoke(manifest, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        LeakChecker.Report report = LeakChecker.check(bucket, racing);

        assertThat(report.bucketKeys()).isEqualTo(2);
        assertThat(report.leakedKeys()).isEmpty();
        assertThat(report.pendingDeletionKeys()).containsExactly(ObjectKeys.dataKey(trimmed));
        assertThat(report.clean()).isTrue();
        assertThat(LeakChecker.check(bucket, manifest).exact()).isTrue();
    }

    @Test
    void aKeyTheManifestDoesNotKnowIsLeakedWhetherNeverKnownOrForgotten() {
        long trimmed = commit(0);
        commit(10);
        manifest.trimStream(stream, 0, 10).join();
        manifest.objectsDeleted(List.of(trimmed)).join(); // recorded, but the delete did not take
        bucket.put("objects/stray", Unpooled.wrappedBuffer(new byte[4])).join();

        LeakChecker.Report report = LeakChecker.check(bucket, manifest);

        assertThat(report.leakedKeys()).containsExactlyInAnyOrder(ObjectKeys.dataKey(trimmed), "objects/stray");
        assertThat(report.clean()).isFalse();
    }

    @Test
    void aCommittedObjectWhoseKeyIsGoneIsMissing() {
        long lost = commit(0);
        bucket.delete(List.of(ObjectKeys.dataKey(lost))).join();

        LeakChecker.Report report = LeakChecker.check(bucket, manifest);

        assertThat(report.missingObjects()).singleElement().asString().startsWith(ObjectKeys.dataKey(lost));
        assertThat(report.clean()).isFalse();
    }
}
