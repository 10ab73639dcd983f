package io.s3stream.wal.object.internal;

import io.netty.buffer.Unpooled;
import io.s3stream.StorageIOException;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Object-store faults under an object WAL: lost answers, throttling, and a store that keeps failing. */
class ObjectWalFaultTest {
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

    private WriteAheadLog wal(long epoch, String params) {
        ObjectWalConfig config = ObjectWalConfig.parse(URI.create("objectwal://?batchMs=2&batchBytes=16KiB" + params));
        WriteAheadLog wal = ObjectWal.open(config, new WalContext(1, epoch, dir, Duration.ofSeconds(10)), store);
        opened.add(wal);
        return wal;
    }

    private List<byte[]> recover(WriteAheadLog wal) {
        List<byte[]> out = new ArrayList<>();
        wal.recover((p, n, r) -> {
            byte[] b = new byte[r.readableBytes()];
            r.getBytes(r.readerIndex(), b);
            r.release();
            out.add(b);
        });
        return out;
    }

    private List<byte[]> appendAll(WriteAheadLog wal, int n) throws Exception {
        List<byte[]> data = new ArrayList<>();
        List<CompletableFuture<WalAppendResult>> futures = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] d = records.next(random, 100 + random.nextInt(4000));
            data.add(d);
            futures.add(wal.append(Unpooled.wrappedBuffer(d)));
        }
        for (CompletableFuture<WalAppendResult> f : futures) {
            f.get(60, TimeUnit.SECONDS);
        }
        return data;
    }

    private long walObjects() {
        return store.delegate().list("wal/1/").join().stream().map(ObjectInfo::key)
                .filter(k -> WalObjectDescriptor.seqOf("wal/1/", k) >= 0).count();
    }

    @Test
    void aLostAnswerOfASuccessfulCreateIsSettledAsItsOwnObject() throws Exception {
        WriteAheadLog wal = wal(1, "&maxInFlight=1");
        recover(wal);
        store.on(Operation.PUT_IF_ABSENT).nthCall(2).loseResponse("timeout after the PUT landed", true);
        store.on(Operation.PUT_IF_ABSENT).nthCall(5).loseResponse("connection reset after the PUT landed", true);
        List<byte[]> data = appendAll(wal, 60);
        long objects = walObjects();
        wal.close();
        List<byte[]> recovered = recover(wal(2, ""));
        assertThat(recovered).as("seed " + seed).hasSize(data.size());
        for (int i = 0; i < data.size(); i++) {
            assertThat(recovered.get(i)).as("record %d (seed %d)", i, seed).isEqualTo(data.get(i));
        }
        assertThat(store.faultsInjected(Operation.PUT_IF_ABSENT)).isEqualTo(2);
        assertThat(walObjects()).as("each window is one object, written once; plus the seal").isEqualTo(objects + 1);
    }

    @Test
    void throttlingIsRetriedAndNothingIsLost() throws Exception {
        WriteAheadLog wal = wal(1, "&maxInFlight=4");
        recover(wal);
        store.on(Operation.PUT_IF_ABSENT).withProbability(0.3).failRetriable("503 SlowDown");
        List<byte[]> data = appendAll(wal, 200);
        assertThat(store.faultsInjected(Operation.PUT_IF_ABSENT)).as("seed " + seed).isPositive();
        store.clearFaults();
        wal.close();
        List<byte[]> recovered = recover(wal(2, ""));
        assertThat(recovered).hasSize(data.size());
        for (int i = 0; i < data.size(); i++) {
            assertThat(recovered.get(i)).as("record %d (seed %d)", i, seed).isEqualTo(data.get(i));
        }
    }

    @Test
    void aStoreThatKeepsFailingFencesTheLogWithAClearErrorAndLosesNothingAcknowledged() throws Exception {
        WriteAheadLog wal = wal(1, "&maxInFlight=2&failAfterMs=500");
        recover(wal);
        List<byte[]> before = appendAll(wal, 20);
        store.on(Operation.PUT_IF_ABSENT).always().failRetriable("503 SlowDown");
        CompletableFuture<WalAppendResult> doomed = wal.append(Unpooled.wrappedBuffer(records.next(random, 200)));
        try {
            doomed.get(30, TimeUnit.SECONDS);
            throw new AssertionError("an append acknowledged while every write fails");
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(StorageIOException.class)
                    .hasMessageContaining("wal/1/").hasMessageContaining("fenced").hasMessageContaining("503");
        }
        CompletableFuture<WalAppendResult> later = wal.append(Unpooled.wrappedBuffer(records.next(random, 200)));
        assertThat(later).failsWithin(10, TimeUnit.SECONDS).withThrowableOfType(ExecutionException.class)
                .withCauseInstanceOf(StorageIOException.class);
        store.clearFaults();
        wal.close();
        List<byte[]> recovered = recover(wal(2, ""));
        assertThat(recovered).as("everything acknowledged before the outage").hasSize(before.size());
    }

    @Test
    void recoveryListsThroughManyObjects() throws Exception {
        WriteAheadLog wal = wal(1, "&maxInFlight=8&batchBytes=1");
        recover(wal);
        List<byte[]> data = appendAll(wal, 1_200); // one record per object: more objects than a list page holds
        wal.close();
        List<byte[]> recovered = recover(wal(2, ""));
        assertThat(recovered).hasSize(data.size());
        assertThat(recovered.getLast()).isEqualTo(data.getLast());
    }
}
