package io.s3stream.wal.object.internal;

import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;
import io.s3stream.testing.FaultInjectingObjectStore;
import io.s3stream.testing.FaultInjectingObjectStore.Operation;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Opening a log deletes the objects below its start that nothing references: under an engine those the manifest does
 * not know ({@link WalContext#knownKeys()}), on a log used on its own those below its trim marker. Objects from the
 * start on, and objects the manifest knows, stay.
 */
class ObjectWalSweepTest {
    @TempDir
    Path dir;
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);
    private final WalRecords records = new WalRecords();
    private FaultInjectingObjectStore store;
    private final List<WriteAheadLog> opened = new ArrayList<>();

    @BeforeEach
    void open() {
        store = new FaultInjectingObjectStore(TestStores.open(dir.toUri().toString()), seed);
    }

    @AfterEach
    void close() {
        opened.forEach(WriteAheadLog::close);
        store.close();
    }

    private WriteAheadLog wal(WalContext context) {
        ObjectWalConfig config = ObjectWalConfig.parse(URI.create("objectwal://?batchMs=2&batchBytes=16KiB"));
        WriteAheadLog wal = ObjectWal.open(config, context, store);
        opened.add(wal);
        return wal;
    }

    private static WalContext context(long epoch) {
        return new WalContext(1, epoch, Path.of("."), Duration.ofSeconds(10));
    }

    /** Writes {@code appends} appends of about 8 KiB (two to three per 16 KiB object). */
    private void fill(WriteAheadLog wal, int appends) throws Exception {
        wal.recover((p, n, r) -> r.release());
        List<CompletableFuture<WalAppendResult>> futures = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            futures.add(wal.append(Unpooled.wrappedBuffer(records.next(random, 8_000))));
        }
        for (CompletableFuture<WalAppendResult> f : futures) {
            f.get(30, TimeUnit.SECONDS);
        }
    }

    private List<String> keys() {
        return store.delegate().list("wal/1/").join().stream().map(ObjectInfo::key)
                .filter(k -> WalObjectDescriptor.seqOf("wal/1/", k) >= 0).sorted().toList();
    }

    private static long seq(String key) {
        return WalObjectDescriptor.seqOf("wal/1/", key);
    }

    @Test
    void underAnEngineTheObjectsBelowTheCommittedPositionThatTheManifestDoesNotKnowAreDeleted() throws Exception {
        WriteAheadLog first = wal(context(1).withCommittedPosition(WalContext.NO_POSITION));
        fill(first, 24);
        first.close();
        List<String> before = keys(); // the first opening's seal, then its data objects
        assertThat(before).as("seed %d", seed).hasSizeGreaterThanOrEqualTo(6);
        String seal = before.getFirst();
        String adopted = before.get(1);
        String orphan = before.get(2);
        String startObject = before.get(3);
        long committed = WalObjectDescriptor.position(seq(startObject), 0);
        List<List<String>> asked = new CopyOnWriteArrayList<>();

        WriteAheadLog second = wal(context(2).withCommittedPosition(committed).withKnownKeys(k -> {
            asked.add(List.copyOf(k));
            return Set.of(adopted);
        }));
        List<Long> delivered = new ArrayList<>();
        second.recover((p, n, r) -> {
            r.release();
            delivered.add(p);
        });

        assertThat(asked).as("one question, about the objects below the start").containsExactly(
                List.of(seal, adopted, orphan));
        List<String> after = keys();
        assertThat(after).as("what the manifest knows and everything from the start stay; the rest goes (seed %d)", seed)
                .contains(adopted).containsAll(before.subList(3, before.size())).doesNotContain(seal, orphan);
        assertThat(delivered.getFirst()).as("recovery still starts at the committed position").isEqualTo(committed);
    }

    @Test
    void aManifestThatCannotBeReadDeletesNothingAndRecoveryGoesOn() throws Exception {
        WriteAheadLog first = wal(context(1).withCommittedPosition(WalContext.NO_POSITION));
        fill(first, 8);
        first.close();
        List<String> before = keys();
        long committed = WalObjectDescriptor.position(seq(before.getLast()), 0);

        WriteAheadLog second = wal(context(2).withCommittedPosition(committed).withKnownKeys(k -> {
            throw new IllegalStateException("the manifest is unreachable");
        }));
        List<Long> delivered = new ArrayList<>();
        second.recover((p, n, r) -> {
            r.release();
            delivered.add(p);
        });

        assertThat(keys()).as("nothing deleted").containsAll(before);
        assertThat(delivered).as("the object at the committed position is delivered").isNotEmpty();
        second.append(Unpooled.wrappedBuffer(records.next(random, 100))).get(10, TimeUnit.SECONDS);
    }

    @Test
    void aLogUsedOnItsOwnDeletesWhatATrimLeftBehind() throws Exception {
        WriteAheadLog first = wal(context(1));
        fill(first, 24);
        List<String> before = keys();
        assertThat(before).as("seed %d", seed).hasSizeGreaterThanOrEqualTo(6);
        long trimTo = WalObjectDescriptor.position(seq(before.get(4)), 0);
        store.on(Operation.DELETE).always().failFatal("503 SlowDown");
        try {
            first.trim(trimTo).get(10, TimeUnit.SECONDS);
        } catch (Exception expected) {
            // the marker is written, its objects' deletion fails: they stay behind
        }
        store.clearFaults();
        first.close();
        assertThat(keys()).as("the trim's objects are still there").containsAll(before);

        WriteAheadLog second = wal(context(2));
        second.recover((p, n, r) -> r.release());

        assertThat(keys()).as("the objects below the trim marker are deleted when the log is opened again (seed %d)",
                seed).doesNotContainAnyElementsOf(before.subList(0, 4)).containsAll(before.subList(4, before.size()));
    }
}
