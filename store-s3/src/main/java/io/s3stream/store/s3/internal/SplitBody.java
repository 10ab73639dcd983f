package io.s3stream.store.s3.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.internal.store.common.SplitBuffers;
import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.spi.ObjectStoreException;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.async.SdkPublisher;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The body of a ranged GET written as it arrives into pooled direct buffers, one per range of a split read
 * ({@code ObjectStore.getSplit}), or one for a plain ranged read ({@link #clipped}): the bytes are copied once, from
 * the HTTP client's buffers into the ones the caller keeps, instead of being gathered into a growing byte array,
 * copied into a second one and then copied out per range (large heap arrays that G1 allocates as humongous objects,
 * and that made every catch-up from S3 a source of garbage-collection pauses for the appends beside it).
 *
 * <p>The SDK calls {@link #prepare()} once per attempt (it may retry on its own); each attempt collects into buffers
 * of its own, and an attempt that fails or is overtaken releases what it gathered. A body that ends early fails the
 * read: not retriable when the {@code Content-Range} header says the object itself ends before the ranges (the
 * caller asked for bytes that do not exist), retriable otherwise (a connection cut mid-body). A body longer than asked
 * for is retriable too; it is never data. A clipped read instead expects, from the response's headers, the part of
 * its range that lies inside the object ({@code ObjectStore.get(key, position, length)}'s contract), and holds the
 * others to the same rules.
 */
final class SplitBody implements AsyncResponseTransformer<GetObjectResponse, List<ByteBuf>> {
    /** The most a clipped read buffers when the response does not say how much of its range exists. */
    static final long UNSIZED_LIMIT = 64L << 20;

    private final String what;
    private final ByteBufAllocator allocator;
    private final long position;
    private final int[] lengths;
    private final long total;
    private final boolean clip;
    private Attempt attempt; // the SDK calls the transformer's methods one at a time, attempt after attempt

    /**
     * @param what     the store and key, for errors
     * @param position the first byte of the range asked for
     * @param lengths  the ranges' lengths, each positive
     */
    SplitBody(String what, long position, int[] lengths) {
        this(what, position, lengths, false, PooledByteBufAllocator.DEFAULT);
    }

    SplitBody(String what, long position, int[] lengths, ByteBufAllocator allocator) {
        this(what, position, lengths, false, allocator);
    }

    /**
     * A plain ranged read of at most {@code length} bytes into one buffer: the body may stop where the object ends
     * (as {@code Content-Range}, or for a read from 0 without one {@code Content-Length}, tells), and the buffer then
     * holds what the object has.
     */
    static SplitBody clipped(String what, long position, int length, ByteBufAllocator allocator) {
        return new SplitBody(what, position, new int[] {length}, true, allocator);
    }

    private SplitBody(String what, long position, int[] lengths, boolean clip, ByteBufAllocator allocator) {
        this.what = what;
        this.clip = clip;
        this.allocator = allocator;
        this.position = position;
        this.lengths = lengths;
        long sum = 0;
        for (int length : lengths) {
            sum += length;
        }
        this.total = sum;
    }

    @Override
    public synchronized CompletableFuture<List<ByteBuf>> prepare() {
        if (attempt != null) {
            attempt.fail(new IllegalStateException(what + ": superseded by a retry"));
        }
        attempt = new Attempt();
        return attempt.result;
    }

    @Override
    public synchronized void onResponse(GetObjectResponse response) {
        attempt.contentRange = response.contentRange();
        if (clip) {
            long inObject = inObject(response);
            if (inObject >= 0) {
                attempt.clipTo(inObject);
            } else if (total > UNSIZED_LIMIT) {
                attempt.fail(new ObjectStoreException(what + ": the response has neither Content-Range nor "
                        + "Content-Length, so the part of the range that exists is unknown; not buffering up to "
                        + total + " bytes for it", false));
            }
        }
    }

    /**
     * How many of the range's bytes the object holds, as the response's headers tell (a 206's {@code Content-Range},
     * or a 200's {@code Content-Length}: a server that ignored Range sent the whole object); -1 when they do not.
     */
    private long inObject(GetObjectResponse response) {
        long size = StoreSupport.sizeFromContentRange(response.contentRange());
        if (size >= 0) {
            return Math.min(total, size - position);
        }
        if (response.contentRange() == null && response.contentLength() != null && position == 0) {
            return Math.min(total, response.contentLength());
        }
        return -1;
    }

    @Override
    public synchronized void onStream(SdkPublisher<ByteBuffer> publisher) {
        publisher.subscribe(attempt);
    }

    @Override
    public synchronized void exceptionOccurred(Throwable error) {
        if (attempt != null) {
            attempt.fail(error);
        }
    }

    /** One attempt's buffers, filled in order as the body arrives. */
    private final class Attempt implements Subscriber<ByteBuffer> {
        final CompletableFuture<List<ByteBuf>> result = new CompletableFuture<>();
        private SplitBuffers buffers = new SplitBuffers(lengths, allocator); // guarded by this
        private long expected = total; // guarded by this: total, or what a clipped read's object holds of it
        volatile String contentRange;
        private boolean failed; // guarded by this
        private Subscription subscription;

        /** A clipped read's expected length, known from the headers before the body arrives. */
        synchronized void clipTo(long bytes) {
            if (bytes < expected && bytes > 0 && !failed && buffers.received() == 0) {
                buffers = new SplitBuffers(new int[] {(int) bytes}, allocator); // nothing allocated yet: lazily
                expected = bytes;
            }
        }

        @Override
        public void onSubscribe(Subscription s) {
            subscription = s;
            synchronized (this) {
                if (failed) { // refused on its headers: the body is not wanted
                    s.cancel();
                    return;
                }
            }
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(ByteBuffer chunk) {
            long asked;
            synchronized (this) {
                if (failed || buffers.write(chunk)) {
                    return;
                }
                asked = expected;
            }
            subscription.cancel();
            fail(new ObjectStoreException(what + ": the body of [" + position + ", " + (position + total)
                    + ") went on past its " + asked + " bytes", true));
        }

        @Override
        public void onError(Throwable error) {
            fail(error);
        }

        @Override
        public void onComplete() {
            long received;
            long asked;
            synchronized (this) {
                if (failed) {
                    return;
                }
                received = buffers.received();
                asked = expected;
                if (received == asked) {
                    result.complete(buffers.take());
                    return;
                }
            }
            boolean endsEarly = objectEndsBefore(position + asked);
            fail(new ObjectStoreException(what + ": the body of [" + position + ", " + (position + total) + ") ended after "
                    + received + " bytes" + (endsEarly ? ", where the object ends" : "") + " (Content-Range "
                    + contentRange + ")", !endsEarly));
        }

        /** Whether {@code Content-Range} ({@code bytes a-b/size}) says the object ends before {@code end}. */
        private boolean objectEndsBefore(long end) {
            long size = StoreSupport.sizeFromContentRange(contentRange);
            return size >= 0 && size < end;
        }

        void fail(Throwable error) {
            synchronized (this) {
                if (failed) {
                    return;
                }
                failed = true;
                buffers.release(); // nothing left in it once taken
            }
            result.completeExceptionally(error);
        }
    }
}
