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
 * ({@code ObjectStore.getSplit}): the bytes are copied once, from the HTTP client's buffers into the ones the caller
 * keeps, instead of being gathered into a byte array, copied into a second one and then copied out per range.
 *
 * <p>The SDK calls {@link #prepare()} once per attempt (it may retry on its own); each attempt collects into buffers
 * of its own, and an attempt that fails or is overtaken releases what it gathered. A body that ends early fails the
 * read: not retriable when the {@code Content-Range} header says the object itself ends before the ranges (the
 * caller asked for bytes that do not exist), retriable otherwise (a connection cut mid-body). A body longer than asked
 * for is retriable too; it is never data.
 */
final class SplitBody implements AsyncResponseTransformer<GetObjectResponse, List<ByteBuf>> {
    private final String what;
    private final ByteBufAllocator allocator;
    private final long position;
    private final int[] lengths;
    private final long total;
    private Attempt attempt; // the SDK calls the transformer's methods one at a time, attempt after attempt

    /**
     * @param what     the store and key, for errors
     * @param position the first byte of the range asked for
     * @param lengths  the ranges' lengths, each positive
     */
    SplitBody(String what, long position, int[] lengths) {
        this(what, position, lengths, PooledByteBufAllocator.DEFAULT);
    }

    SplitBody(String what, long position, int[] lengths, ByteBufAllocator allocator) {
        this.what = what;
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
        final SplitBuffers buffers = new SplitBuffers(lengths, allocator); // guarded by this
        volatile String contentRange;
        private boolean failed; // guarded by this
        private Subscription subscription;

        @Override
        public void onSubscribe(Subscription s) {
            subscription = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(ByteBuffer chunk) {
            synchronized (this) {
                if (failed || buffers.write(chunk)) {
                    return;
                }
            }
            subscription.cancel();
            fail(new ObjectStoreException(what + ": the body of [" + position + ", " + (position + total)
                    + ") went on past its " + total + " bytes", true));
        }

        @Override
        public void onError(Throwable error) {
            fail(error);
        }

        @Override
        public void onComplete() {
            long received;
            synchronized (this) {
                if (failed) {
                    return;
                }
                received = buffers.received();
                if (received == total) {
                    result.complete(buffers.take());
                    return;
                }
            }
            boolean endsEarly = objectEndsEarly();
            fail(new ObjectStoreException(what + ": the body of [" + position + ", " + (position + total) + ") ended after "
                    + received + " bytes" + (endsEarly ? ", where the object ends" : "") + " (Content-Range "
                    + contentRange + ")", !endsEarly));
        }

        /** Whether {@code Content-Range} ({@code bytes a-b/size}) says the object ends before the ranges do. */
        private boolean objectEndsEarly() {
            long size = StoreSupport.sizeFromContentRange(contentRange);
            return size >= 0 && size < position + total;
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
