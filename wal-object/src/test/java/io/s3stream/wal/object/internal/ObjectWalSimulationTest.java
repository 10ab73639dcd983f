package io.s3stream.wal.object.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.NodeFencedException;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WalSegment;
import io.s3stream.spi.WriteAheadLog;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A zombie owner, a taker and a hostile store: an owner appends while another node takes its log over, over a store
 * that delays and reorders answers, loses the answers of requests that succeeded, throttles, and lists stale data.
 * Faults and timings come from the seed (printed in every failure; replay one with {@code -Ds3stream.seed=<seed>});
 * thread interleavings are real, so a seed replays the same faults, not the same schedule.
 *
 * <p>Invariants, for every seed:
 * <ol>
 *   <li><b>No acknowledged record lost</b>: every record the owner acknowledged is delivered by the taker's recovery,
 *       byte for byte, in the owner's order.</li>
 *   <li><b>No record invented or delivered twice</b>: the taker delivers a prefix of what the owner appended.</li>
 *   <li><b>A fenced writer acknowledges nothing after the seal</b>: once fenced, the owner's appends fail with
 *       {@link NodeFencedException} (or fail, never succeed) — implied by 1 and 2.</li>
 *   <li><b>Every object is reported once</b>: each object the store holds at or before the taker's seal, from where
 *       the taker started, is reported by exactly one segment of the owner's acknowledgements or the taker.</li>
 *   <li><b>Recovery is repeatable</b>: a third owner recovering after the taker delivers the same records.</li>
 * </ol>
 */
class ObjectWalSimulationTest {
    private static final int SEEDS = Integer.getInteger("s3stream.simulation.seeds", 12);

    static LongStream seeds() {
        String fixed = System.getProperty("s3stream.seed");
        if (fixed != null) {
            return LongStream.of(Long.parseLong(fixed));
        }
        long base = System.nanoTime();
        return LongStream.range(0, SEEDS).map(i -> base + i * 0x9E3779B97F4A7C15L);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void aZombieOwnerAndATakerOnAHostileStore(long seed) throws Exception {
        String where = " (seed " + seed + "; replay with -Ds3stream.seed=" + seed + ")";
        Random random = new Random(seed);
        ScheduledExecutorService timer = Executors.newScheduledThreadPool(2);
        HostileStore store = new HostileStore(new Random(random.nextLong()), timer);
        try {
            ObjectWalConfig config = ObjectWalConfig.parse(URI.create("objectwal://?batchMs=" + (1 + random.nextInt(5))
                    + "&batchBytes=" + (4 + random.nextInt(60)) + "KiB&maxInFlight=" + (1 + random.nextInt(8))
                    + "&capacity=64MiB&failAfterMs=30000"));
            WalRecords records = new WalRecords();
            WriteAheadLog owner = ObjectWal.open(config, context(1), store);
            owner.recover((p, n, r) -> r.release());

            int total = 200 + random.nextInt(600);
            int takeoverAt = random.nextInt(total);
            List<byte[]> appended = new ArrayList<>();
            List<CompletableFuture<WalAppendResult>> futures = new ArrayList<>();
            List<byte[]> taken = new ArrayList<>();
            List<WalSegment> takerSegments = new ArrayList<>();
            CompletableFuture<Void> takeover = null;
            Random writer = new Random(random.nextLong());
            for (int i = 0; i < total; i++) {
                if (i == takeoverAt) {
                    takeover = CompletableFuture.runAsync(() -> {
                        WriteAheadLog taker = ObjectWal.open(config, context(2).forTakeover(), store);
                        taker.recover((p, n, r) -> {
                            byte[] b = new byte[r.readableBytes()];
                            r.getBytes(r.readerIndex(), b);
                            r.release();
                            taken.add(b);
                        });
                        takerSegments.addAll(taker.segments(0, Long.MAX_VALUE));
                        taker.close();
                    });
                }
                byte[] data = records.next(writer, 60 + writer.nextInt(3000));
                ByteBuf buf = Unpooled.wrappedBuffer(data);
                appended.add(data);
                futures.add(owner.append(buf));
                if (writer.nextInt(20) == 0) {
                    Thread.sleep(writer.nextInt(3));
                }
            }
            takeover.get(60, TimeUnit.SECONDS);
            List<byte[]> acknowledged = new ArrayList<>();
            List<WalSegment> ownerSegments = owner.segments(0, Long.MAX_VALUE);
            boolean failed = false;
            for (int i = 0; i < futures.size(); i++) {
                try {
                    futures.get(i).get(60, TimeUnit.SECONDS);
                    assertThat(failed).as("acknowledgements form a prefix" + where).isFalse();
                    acknowledged.add(appended.get(i));
                } catch (ExecutionException e) {
                    failed = true;
                }
            }
            // 3: once the taker has sealed, the owner acknowledges nothing new.
            CompletableFuture<WalAppendResult> after = owner.append(Unpooled.wrappedBuffer(records.next(writer, 100)));
            try {
                WalAppendResult r = after.get(60, TimeUnit.SECONDS);
                throw new AssertionError("the fenced owner acknowledged an append at " + r + where);
            } catch (ExecutionException e) {
                assertThat(e.getCause()).as("the owner's append after the takeover" + where)
                        .isInstanceOf(NodeFencedException.class);
            }
            owner.close();

            // 1 and 2: the taker delivered a prefix of what was appended, holding everything acknowledged.
            assertThat(taken.size()).as("records the taker delivered" + where)
                    .isGreaterThanOrEqualTo(acknowledged.size()).isLessThanOrEqualTo(appended.size());
            for (int i = 0; i < taken.size(); i++) {
                assertThat(taken.get(i)).as("record " + i + where).isEqualTo(appended.get(i));
            }
            WriteAheadLog late = ObjectWal.open(config, context(3), store);

            // 4: every object up to the taker's seal is reported exactly once.
            Set<String> reported = new HashSet<>();
            long takerStart = takerSegments.isEmpty() ? Long.MAX_VALUE : takerSegments.getFirst().startPosition();
            for (WalSegment s : ownerSegments) {
                if (s.startPosition() < takerStart) {
                    assertThat(reported.add(s.key())).as("reported once: " + s.key() + where).isTrue();
                }
            }
            for (WalSegment s : takerSegments) {
                assertThat(reported.add(s.key())).as("reported once: " + s.key() + where).isTrue();
            }
            long sealSeq = WalObjectDescriptor.seqOfPosition(takerSegments.getLast().startPosition());
            String prefix = WalObjectDescriptor.nodePrefix(1);
            for (String key : store.keys()) {
                long seq = WalObjectDescriptor.seqOf(prefix, key);
                if (seq >= 0 && seq <= sealSeq) {
                    assertThat(reported).as("object " + key + " is reported" + where).contains(key);
                }
            }

            // 5: recovering again delivers the same records.
            List<byte[]> again = new ArrayList<>();
            late.recover((p, n, r) -> {
                byte[] b = new byte[r.readableBytes()];
                r.getBytes(r.readerIndex(), b);
                r.release();
                again.add(b);
            });
            late.close();
            assertThat(again).as("a later recovery" + where).hasSameSizeAs(taken);
            for (int i = 0; i < again.size(); i++) {
                assertThat(again.get(i)).as("record " + i + " recovered again" + where).isEqualTo(taken.get(i));
            }
        } finally {
            timer.shutdownNow();
        }
    }

    private static WalContext context(long epoch) {
        return new WalContext(1, epoch, Path.of("."), Duration.ofSeconds(30));
    }

    /**
     * An in-memory store whose answers arrive late and out of order, are sometimes lost after the request took effect
     * (the caller sees a timeout), sometimes refused with a retriable 503 before taking effect, and whose listings
     * sometimes miss objects created in the last few milliseconds. Decisions come from the seed.
     */
    static final class HostileStore implements ObjectStore {
        private final ConcurrentSkipListMap<String, byte[]> objects = new ConcurrentSkipListMap<>();
        private final Map<String, Long> createdNanos = new HashMap<>();
        private final Random random;
        private final ScheduledExecutorService timer;

        HostileStore(Random random, ScheduledExecutorService timer) {
            this.random = random;
            this.timer = timer;
        }

        Collection<String> keys() {
            return new ArrayList<>(objects.keySet());
        }

        private synchronized int roll(int bound) {
            return random.nextInt(bound);
        }

        /** Runs {@code effect} now or not at all, and delivers its answer (or a fault) after a random delay. */
        private <T> CompletableFuture<T> answer(java.util.function.Supplier<T> effect, boolean mutating) {
            CompletableFuture<T> out = new CompletableFuture<>();
            int fault = roll(100);
            long delayMicros = roll(3000);
            if (mutating && fault < 4) {
                timer.schedule(() -> out.completeExceptionally(new ObjectStoreException("503 SlowDown (injected)", null,
                        true)), delayMicros, TimeUnit.MICROSECONDS);
                return out;
            }
            T value;
            try {
                value = effect.get();
            } catch (RuntimeException e) {
                timer.schedule(() -> out.completeExceptionally(e), delayMicros, TimeUnit.MICROSECONDS);
                return out;
            }
            if (mutating && fault < 12) {
                // took effect, answer lost
                timer.schedule(() -> out.completeExceptionally(new TimeoutException("answer lost (injected)")),
                        delayMicros, TimeUnit.MICROSECONDS);
                return out;
            }
            timer.schedule(() -> out.complete(value), delayMicros, TimeUnit.MICROSECONDS);
            return out;
        }

        private static byte[] bytes(ByteBuf data) {
            byte[] b = new byte[data.readableBytes()];
            data.getBytes(data.readerIndex(), b);
            return b;
        }

        @Override
        public CompletableFuture<Void> put(String key, ByteBuf data) {
            byte[] b = bytes(data);
            return answer(() -> {
                objects.put(key, b);
                return null;
            }, true);
        }

        @Override
        public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
            byte[] b = bytes(data);
            return answer(() -> {
                synchronized (createdNanos) {
                    boolean created = objects.putIfAbsent(key, b) == null;
                    if (created) {
                        createdNanos.put(key, System.nanoTime());
                    }
                    return created;
                }
            }, true);
        }

        @Override
        public CompletableFuture<ByteBuf> get(String key, long position, int length) {
            return answer(() -> {
                byte[] b = objects.get(key);
                if (b == null) {
                    throw new ObjectNotFoundException(key);
                }
                int end = (int) Math.min(b.length, position + length);
                return Unpooled.wrappedBuffer(Arrays.copyOfRange(b, (int) position, end));
            }, false);
        }

        @Override
        public CompletableFuture<ByteBuf> get(String key) {
            return answer(() -> {
                byte[] b = objects.get(key);
                if (b == null) {
                    throw new ObjectNotFoundException(key);
                }
                return Unpooled.wrappedBuffer(b.clone());
            }, false);
        }

        @Override
        public CompletableFuture<Optional<ObjectInfo>> head(String key) {
            return answer(() -> Optional.ofNullable(objects.get(key)).map(b -> new ObjectInfo(key, b.length, 0)),
                    false);
        }

        @Override
        public CompletableFuture<List<ObjectInfo>> list(String prefix) {
            long staleNanos = roll(4) == 0 ? TimeUnit.MILLISECONDS.toNanos(roll(20)) : 0;
            return answer(() -> {
                long now = System.nanoTime();
                List<ObjectInfo> out = new ArrayList<>();
                for (var e : objects.tailMap(prefix).entrySet()) {
                    if (!e.getKey().startsWith(prefix)) {
                        break;
                    }
                    Long created;
                    synchronized (createdNanos) {
                        created = createdNanos.get(e.getKey());
                    }
                    if (created != null && now - created < staleNanos) {
                        continue; // list-after-write lag
                    }
                    out.add(new ObjectInfo(e.getKey(), e.getValue().length, 0));
                }
                return out;
            }, false);
        }

        @Override
        public CompletableFuture<Void> delete(Collection<String> keys) {
            return answer(() -> {
                keys.forEach(objects::remove);
                return null;
            }, true);
        }

        @Override
        public CompletableFuture<MultipartUpload> startMultipart(String key) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no multipart in the simulation"));
        }

        @Override
        public String description() {
            return "hostile-store";
        }

        @Override
        public void close() {
        }
    }
}
