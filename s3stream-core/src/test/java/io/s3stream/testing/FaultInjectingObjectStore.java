package io.s3stream.testing;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;

import java.time.Duration;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongPredicate;
import java.util.function.Supplier;

/**
 * An {@link ObjectStore} wrapper that injects scripted faults, for tests of retries, timeouts and failure handling
 * above the store: fail a call (as S3 does with "503 SlowDown" or "403 AccessDenied"), apply a call but lose its
 * response, delay it, truncate what a GET returns, or never answer. It counts calls per {@link Operation}.
 *
 * <pre>{@code
 * var store = new FaultInjectingObjectStore(MemObjectStore.open("t", 1024), 42);
 * store.on(Operation.GET).nthCall(2).failRetriable("503 SlowDown");
 * store.on(Operation.PUT).withProbability(0.1).delay(Duration.ofMillis(200));
 * store.on(Operation.COMPLETE).always().hang();
 * }</pre>
 *
 * <p>Rules are checked in the order they were added; every rule of an operation counts every call of that operation
 * from the moment it was added (so {@code nthCall(2)} means the second call after the rule exists), and the first
 * rule that fires decides the call. Probabilities draw from one {@link Random} seeded at construction, so a run is
 * reproducible for a given seed and call order; the seed is in {@link #toString()} for failure messages.
 *
 * <p>A call that fails before reaching the delegate, or hangs, never calls it, so no buffer is involved; a call
 * whose response is lost releases the buffer the delegate returned. {@link #close()} fails every hung call, so
 * callers waiting on them (and holding buffers) are released, then closes the delegate.
 */
public final class FaultInjectingObjectStore implements ObjectStore {

    /** Kinds of calls, each with its own rules and counter. */
    public enum Operation {
        PUT, PUT_IF_ABSENT, GET, HEAD, LIST, DELETE, START_MULTIPART,
        /** {@code uploadPart} and {@code uploadPartCopy}. */
        PART,
        COMPLETE, ABORT
    }

    private final ObjectStore delegate;
    private final long seed;
    private final Random random; // guarded by this
    private final List<Rule> rules = new CopyOnWriteArrayList<>();
    private final Map<Operation, AtomicLong> calls = new EnumMap<>(Operation.class);
    private final Map<Operation, AtomicLong> faults = new EnumMap<>(Operation.class);
    private final Set<CompletableFuture<?>> hung = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Wraps {@code delegate}; {@code seed} drives every probabilistic rule. */
    public FaultInjectingObjectStore(ObjectStore delegate, long seed) {
        this.delegate = delegate;
        this.seed = seed;
        this.random = new Random(seed);
        for (Operation operation : Operation.values()) {
            calls.put(operation, new AtomicLong());
            faults.put(operation, new AtomicLong());
        }
    }

    /** Starts a rule for {@code operation}: choose when it fires, then what it does. */
    public Trigger on(Operation operation) {
        return new Trigger(operation);
    }

    /** Removes every rule; counters keep counting. */
    public void clearFaults() {
        rules.clear();
    }

    /** Calls of {@code operation} so far, faulted or not. */
    public long calls(Operation operation) {
        return calls.get(operation).get();
    }

    /** Calls of {@code operation} a rule has acted on. */
    public long faultsInjected(Operation operation) {
        return faults.get(operation).get();
    }

    /** Calls currently hanging. */
    public int hangingCalls() {
        return hung.size();
    }

    /** The seed of the probabilistic rules. */
    public long seed() {
        return seed;
    }

    /** The wrapped store. */
    public ObjectStore delegate() {
        return delegate;
    }

    @Override
    public CompletableFuture<Void> put(String key, ByteBuf data) {
        return intercept(Operation.PUT, () -> delegate.put(key, data));
    }

    @Override
    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
        return intercept(Operation.PUT_IF_ABSENT, () -> delegate.putIfAbsent(key, data));
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        return intercept(Operation.GET, () -> delegate.get(key, position, length));
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key) {
        return intercept(Operation.GET, () -> delegate.get(key));
    }

    @Override
    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        return intercept(Operation.HEAD, () -> delegate.head(key));
    }

    @Override
    public CompletableFuture<List<ObjectInfo>> list(String prefix) {
        return intercept(Operation.LIST, () -> delegate.list(prefix));
    }

    @Override
    public CompletableFuture<Void> delete(Collection<String> keys) {
        return intercept(Operation.DELETE, () -> delegate.delete(keys));
    }

    @Override
    public CompletableFuture<MultipartUpload> startMultipart(String key) {
        CompletableFuture<MultipartUpload> started = intercept(Operation.START_MULTIPART,
                () -> delegate.startMultipart(key));
        return relay(started, FaultyUpload::new);
    }

    @Override
    public int minPartSizeBytes() {
        return delegate.minPartSizeBytes();
    }

    @Override
    public boolean copiesOnThisNode() {
        return delegate.copiesOnThisNode();
    }

    @Override
    public String description() {
        return "faults(" + delegate.description() + ")";
    }

    /** Fails every hung call, then closes the delegate. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            for (CompletableFuture<?> future : hung) {
                future.completeExceptionally(new ObjectStoreException(description()
                        + ": store closed while the request hung", false));
            }
            hung.clear();
            delegate.close();
        }
    }

    @Override
    public String toString() {
        return description() + " seed=" + seed;
    }

    // --------------------------------------------------------------------------------------------------------------

    private <T> CompletableFuture<T> intercept(Operation operation, Supplier<CompletableFuture<T>> call) {
        calls.get(operation).incrementAndGet();
        Rule rule = firstFiring(operation);
        if (rule == null) {
            return call.get();
        }
        faults.get(operation).incrementAndGet();
        return rule.action.apply(this, call);
    }

    private synchronized Rule firstFiring(Operation operation) {
        Rule chosen = null;
        for (Rule rule : rules) {
            if (rule.operation == operation && rule.fires(random) && chosen == null) {
                chosen = rule;
            }
        }
        if (chosen != null) {
            chosen.fired.incrementAndGet();
        }
        return chosen;
    }

    /** Completes a new future like {@code source}, with its value mapped and its failure unwrapped. */
    private static <T, R> CompletableFuture<R> relay(CompletableFuture<T> source, Function<T, R> map) {
        CompletableFuture<R> out = new CompletableFuture<>();
        source.whenComplete((value, error) -> {
            if (error != null) {
                out.completeExceptionally(error instanceof CompletionException && error.getCause() != null
                        ? error.getCause() : error);
            } else {
                try {
                    out.complete(map.apply(value));
                } catch (RuntimeException e) {
                    out.completeExceptionally(e);
                }
            }
        });
        return out;
    }

    private static <T> CompletableFuture<T> callSafely(Supplier<CompletableFuture<T>> call) {
        try {
            return call.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** What a rule does to a call it fires on. */
    @FunctionalInterface
    private interface Action {
        <T> CompletableFuture<T> apply(FaultInjectingObjectStore store, Supplier<CompletableFuture<T>> call);
    }

    /** When a rule fires: the first half of {@code on(op).<trigger>.<action>}. */
    public final class Trigger {
        private final Operation operation;

        private Trigger(Operation operation) {
            this.operation = operation;
        }

        /** Only the {@code n}-th call (counting from 1) after the rule is added. */
        public Fault nthCall(long n) {
            if (n < 1) {
                throw new IllegalArgumentException("n counts from 1, was " + n);
            }
            return new Fault(operation, seen -> seen == n, "call #" + n);
        }

        /** The next {@code n} calls, then never again. */
        public Fault nextCalls(long n) {
            return new Fault(operation, seen -> seen <= n, "next " + n + " calls");
        }

        /** Every call. */
        public Fault always() {
            return new Fault(operation, seen -> true, "every call");
        }

        /** Each call with probability {@code p}, drawn from the store's seeded {@link Random}. */
        public Fault withProbability(double p) {
            if (!(p >= 0 && p <= 1)) {
                throw new IllegalArgumentException("p must be in [0, 1], was " + p);
            }
            return new Fault(operation, null, "probability " + p).probability(p);
        }
    }

    /** What a rule does: the second half of {@code on(op).<trigger>.<action>}; each method adds the rule. */
    public final class Fault {
        private final Operation operation;
        private final LongPredicate byCount;
        private final String when;
        private double probability = -1;

        private Fault(Operation operation, LongPredicate byCount, String when) {
            this.operation = operation;
            this.byCount = byCount;
            this.when = when;
        }

        private Fault probability(double p) {
            this.probability = p;
            return this;
        }

        /** Fails without calling the store, with a retriable error such as {@code "503 SlowDown"}. */
        public Rule failRetriable(String status) {
            return fail(status, true);
        }

        /** Fails without calling the store, with a final error such as {@code "403 AccessDenied"}. */
        public Rule failFatal(String status) {
            return fail(status, false);
        }

        /** Fails without calling the store. */
        public Rule fail(String status, boolean retriable) {
            return add("fail " + status, new Action() {
                @Override
                public <T> CompletableFuture<T> apply(FaultInjectingObjectStore store, Supplier<CompletableFuture<T>> call) {
                    return CompletableFuture.failedFuture(store.injected(operation, status, retriable));
                }
            });
        }

        /**
         * Lets the store apply the call, then reports a failure instead of its result: a response lost after the
         * request took effect (a timeout after a PUT landed). A returned buffer is released.
         */
        public Rule loseResponse(String status, boolean retriable) {
            return add("lose response " + status, new Action() {
                @Override
                public <T> CompletableFuture<T> apply(FaultInjectingObjectStore store, Supplier<CompletableFuture<T>> call) {
                    return relay(callSafely(call), value -> {
                        if (value instanceof ByteBuf buf) {
                            buf.release();
                        }
                        throw store.injected(operation, status, retriable);
                    });
                }
            });
        }

        /** Calls the store after {@code delay}. */
        public Rule delay(Duration delay) {
            return add("delay " + delay, new Action() {
                @Override
                public <T> CompletableFuture<T> apply(FaultInjectingObjectStore store, Supplier<CompletableFuture<T>> call) {
                    CompletableFuture<Void> timer = new CompletableFuture<>();
                    CompletableFuture.delayedExecutor(delay.toNanos(), TimeUnit.NANOSECONDS).execute(() -> timer.complete(null));
                    CompletableFuture<T> out = new CompletableFuture<>();
                    timer.thenRun(() -> callSafely(call).whenComplete((value, error) -> {
                        if (error != null) {
                            out.completeExceptionally(error);
                        } else {
                            out.complete(value);
                        }
                    }));
                    return out;
                }
            });
        }

        /**
         * Makes the call take a network round trip: it reaches the store after half of {@code rtt}, and its answer
         * reaches the caller after the other half (so another caller can act on the store in between, as on S3).
         */
        public Rule roundTrip(Duration rtt) {
            long half = rtt.toNanos() / 2;
            return add("round trip " + rtt, new Action() {
                @Override
                public <T> CompletableFuture<T> apply(FaultInjectingObjectStore store,
                                                      Supplier<CompletableFuture<T>> call) {
                    CompletableFuture<T> out = new CompletableFuture<>();
                    java.util.concurrent.Executor later = CompletableFuture.delayedExecutor(half, TimeUnit.NANOSECONDS);
                    later.execute(() -> callSafely(call).whenComplete((value, error) -> later.execute(() -> {
                        if (error != null) {
                            out.completeExceptionally(error);
                        } else {
                            out.complete(value);
                        }
                    })));
                    return out;
                }
            });
        }

        /** Returns at most {@code maxBytes} of what a GET read, as a torn response would. GET rules only. */
        public Rule truncateTo(int maxBytes) {
            if (operation != Operation.GET) {
                throw new IllegalStateException("truncateTo applies to GET only, not " + operation);
            }
            return add("truncate to " + maxBytes, new Action() {
                @Override
                public <T> CompletableFuture<T> apply(FaultInjectingObjectStore store, Supplier<CompletableFuture<T>> call) {
                    return relay(callSafely(call), value -> {
                        ByteBuf buf = (ByteBuf) value;
                        buf.writerIndex(buf.readerIndex() + Math.min(maxBytes, buf.readableBytes()));
                        return value;
                    });
                }
            });
        }

        /** Never answers and never calls the store; {@link FaultInjectingObjectStore#close()} fails the call. */
        public Rule hang() {
            return add("hang", new Action() {
                @Override
                public <T> CompletableFuture<T> apply(FaultInjectingObjectStore store, Supplier<CompletableFuture<T>> call) {
                    CompletableFuture<T> never = new CompletableFuture<>();
                    store.hung.add(never);
                    if (store.closed.get() && store.hung.remove(never)) {
                        never.completeExceptionally(new ObjectStoreException(store.description() + ": closed", false));
                    }
                    return never;
                }
            });
        }

        private Rule add(String what, Action action) {
            Rule rule = new Rule(operation, byCount, probability, action, operation + " " + when + ": " + what);
            rules.add(rule);
            return rule;
        }
    }

    private ObjectStoreException injected(Operation operation, String status, boolean retriable) {
        return new ObjectStoreException(description() + ": injected fault on " + operation + ": " + status, retriable);
    }

    /** One scripted fault; {@link #remove()} stops it. */
    public final class Rule {
        private final Operation operation;
        private final LongPredicate byCount;
        private final double probability;
        private final Action action;
        private final String description;
        private long seen; // guarded by the store
        private final AtomicLong fired = new AtomicLong();

        private Rule(Operation operation, LongPredicate byCount, double probability, Action action,
                     String description) {
            this.operation = operation;
            this.byCount = byCount;
            this.probability = probability;
            this.action = action;
            this.description = description;
        }

        private boolean fires(Random random) {
            seen++;
            return byCount != null ? byCount.test(seen) : random.nextDouble() < probability;
        }

        /** How many calls this rule acted on. */
        public long fired() {
            return fired.get();
        }

        /** Stops the rule. */
        public void remove() {
            rules.remove(this);
        }

        @Override
        public String toString() {
            return description;
        }
    }

    /** Applies the store's rules to the calls of one multipart upload. */
    private final class FaultyUpload implements MultipartUpload {
        private final MultipartUpload upload;

        FaultyUpload(MultipartUpload upload) {
            this.upload = upload;
        }

        @Override
        public String key() {
            return upload.key();
        }

        @Override
        public CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data) {
            return intercept(Operation.PART, () -> upload.uploadPart(partNumber, data));
        }

        @Override
        public CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position, long length) {
            return intercept(Operation.PART, () -> upload.uploadPartCopy(partNumber, sourceKey, position, length));
        }

        @Override
        public CompletableFuture<Void> complete() {
            return intercept(Operation.COMPLETE, upload::complete);
        }

        @Override
        public CompletableFuture<Void> abort() {
            return intercept(Operation.ABORT, upload::abort);
        }
    }
}
