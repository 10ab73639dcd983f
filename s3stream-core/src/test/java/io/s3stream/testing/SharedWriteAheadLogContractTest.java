package io.s3stream.testing;

import io.netty.buffer.ByteBuf;
import io.s3stream.NodeFencedException;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WriteAheadLog;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@link WriteAheadLog} contract for WALs on shared storage (a shared file system, object storage, and the
 * in-memory WAL), which another node can take over: everything in {@link WriteAheadLogContractTest}, plus takeover.
 * Each node id has a log of its own under one target.
 */
public abstract class SharedWriteAheadLogContractTest extends WriteAheadLogContractTest {

    @Test
    void takeoverDeliversEveryAcknowledgedRecordFencesTheOwnerAndRefusesAppends() throws Exception {
        WriteAheadLog owner = open(1, 3);
        recover(owner);
        List<WalAppendResult> results = new ArrayList<>();
        List<byte[]> written = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            byte[] data = randomRecord(2000);
            written.add(data);
            results.add(appendSync(owner, data));
        }
        owner.trim(results.get(9).nextPosition()).get(10, TimeUnit.SECONDS);

        WriteAheadLog taker = openForTakeover(1, 4);
        List<Recovered> recovered = recover(taker);
        assertThat(recovered).extracting(Recovered::data).as(seedInfo())
                .containsExactlyElementsOf(written.subList(10, 30));

        Throwable fenced = appendFailure(owner, randomRecord(100));
        assertThat(fenced).as("the old owner is fenced").isInstanceOf(NodeFencedException.class);
        Throwable refused = appendFailure(taker, randomRecord(100));
        assertThat(refused).as("a WAL opened for takeover does not append").isNotNull()
                .isNotInstanceOf(NodeFencedException.class);

        taker.trim(recovered.getLast().nextPosition()).get(10, TimeUnit.SECONDS);
        taker.close();
        assertThat(recover(open(1, 5))).as("the node, restarting, finds its log trimmed by the taker").isEmpty();
    }

    @Test
    void takeoverOfALiveOwnerLosesNothingTheOwnerAcknowledges() throws Exception {
        WriteAheadLog owner = open(1, 3);
        recover(owner);
        List<CompletableFuture<WalAppendResult>> futures = Collections.synchronizedList(new ArrayList<>());
        List<byte[]> data = Collections.synchronizedList(new ArrayList<>());
        Thread writer = Thread.ofPlatform().start(() -> {
            for (int i = 0; i < 400; i++) {
                byte[] d = randomRecord(500);
                ByteBuf buf = buffer(d);
                CompletableFuture<WalAppendResult> f;
                try {
                    f = owner.append(buf);
                } catch (RuntimeException e) {
                    f = CompletableFuture.failedFuture(e);
                }
                f.whenComplete((r, e) -> buf.release());
                data.add(d);
                futures.add(f);
                if (f.isCompletedExceptionally()) {
                    break;
                }
            }
        });
        Thread.sleep(random.nextInt(50));
        List<Recovered> recovered = recover(openForTakeover(1, 4));
        writer.join();
        List<byte[]> acknowledged = new ArrayList<>();
        for (int i = 0; i < futures.size(); i++) {
            try {
                futures.get(i).get(30, TimeUnit.SECONDS);
                acknowledged.add(data.get(i));
            } catch (ExecutionException e) {
                assertThat(rootCause(e)).as("appends after the takeover fail with the fencing error" + seedInfo())
                        .isInstanceOf(NodeFencedException.class);
            }
        }
        List<byte[]> taken = recovered.stream().map(Recovered::data).toList();
        assertThat(taken.size()).as(seedInfo()).isGreaterThanOrEqualTo(acknowledged.size());
        for (int i = 0; i < acknowledged.size(); i++) {
            assertThat(taken.get(i)).as("acknowledged record " + i + " is recovered by the taker" + seedInfo())
                    .isEqualTo(acknowledged.get(i));
        }
    }

    @Test
    void takeoverOfANodeWithoutALogFindsNothing() throws Exception {
        assertThat(recover(openForTakeover(7, 1))).isEmpty();
    }

    private Throwable appendFailure(WriteAheadLog wal, byte[] data) throws Exception {
        ByteBuf buf = buffer(data);
        try {
            wal.append(buf).get(30, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return rootCause(e);
        } catch (RuntimeException e) {
            return e;
        } finally {
            buf.release();
        }
    }

    @Override
    protected boolean logsPerNode() {
        return true;
    }

    /** Opens node {@code nodeId}'s log of this test's target for takeover at {@code nodeEpoch}. */
    protected abstract WriteAheadLog openWalForTakeover(long nodeId, long nodeEpoch) throws Exception;

    private WriteAheadLog openForTakeover(long nodeId, long nodeEpoch) throws Exception {
        WriteAheadLog wal = openWalForTakeover(nodeId, nodeEpoch);
        opened.add(wal);
        return wal;
    }

}
