package io.s3stream.store.s3.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.s3stream.spi.ObjectStoreException;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.async.SdkPublisher;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * {@link SplitBody} fed by hand the way the SDK feeds it (prepare, response, a stream of chunks): chunk boundaries
 * anywhere relative to range boundaries, bodies that end early or go on too long, failures and retries; the
 * MinIO and S3Proxy contract tests drive it through real GETs.
 */
class SplitBodyTest {
    private static final int[] LENGTHS = {5, 1, 300, 64, 30};
    private static final int TOTAL = Arrays.stream(LENGTHS).sum();

    private final Random random = new Random(20261127);
    private final byte[] body = new byte[TOTAL + 10];

    SplitBodyTest() {
        random.nextBytes(body);
    }

    @Test
    void chunksOfAnySizeFillEachRangeExactly() throws Exception {
        for (int trial = 0; trial < 200; trial++) {
            SplitBody split = new SplitBody("test", 1000, LENGTHS.clone());
            CompletableFuture<List<ByteBuf>> result = split.prepare();
            split.onResponse(response("bytes 1000-" + (1000 + TOTAL - 1) + "/5000"));
            split.onStream(SdkPublisher.fromIterable(chunks(body, TOTAL)));
            List<ByteBuf> parts = result.get();
            assertThat(parts).hasSize(LENGTHS.length);
            int at = 0;
            for (int i = 0; i < LENGTHS.length; i++) {
                ByteBuf part = parts.get(i);
                assertThat(part.isDirect()).isTrue();
                byte[] got = new byte[part.readableBytes()];
                part.readBytes(got);
                assertThat(got).as("trial %d, range %d", trial, i).isEqualTo(Arrays.copyOfRange(body, at, at + LENGTHS[i]));
                at += LENGTHS[i];
                part.release();
            }
        }
    }

    @Test
    void aBodyEndingWhereTheObjectEndsIsFinalAndOneCutShortIsRetriable() {
        SplitBody split = new SplitBody("test", 1000, LENGTHS.clone());
        CompletableFuture<List<ByteBuf>> result = split.prepare();
        split.onResponse(response("bytes 1000-1299/1300")); // the object ends 100 bytes before the ranges do
        split.onStream(SdkPublisher.fromIterable(chunks(body, 300)));
        ObjectStoreException e = failure(result);
        assertThat(e.isRetriable()).isFalse();
        assertThat(e.getMessage()).contains("ended after 300 bytes", "where the object ends");

        split = new SplitBody("test", 1000, LENGTHS.clone());
        result = split.prepare();
        split.onResponse(response("bytes 1000-1399/5000")); // the object goes on: the connection was cut
        split.onStream(SdkPublisher.fromIterable(chunks(body, 300)));
        e = failure(result);
        assertThat(e.isRetriable()).isTrue();
        assertThat(e.getMessage()).contains("ended after 300 bytes");
    }

    @Test
    void aBodyLongerThanAskedIsRetriableNeverData() {
        SplitBody split = new SplitBody("test", 0, LENGTHS.clone());
        CompletableFuture<List<ByteBuf>> result = split.prepare();
        split.onResponse(response(null));
        split.onStream(SdkPublisher.fromIterable(chunks(body, TOTAL + 10)));
        ObjectStoreException e = failure(result);
        assertThat(e.isRetriable()).isTrue();
        assertThat(e.getMessage()).contains("went on past its " + TOTAL + " bytes");
    }

    @Test
    void aFailedAttemptReleasesItsBuffersAndARetryStartsAfresh() throws Exception {
        UnpooledByteBufAllocator allocator = new UnpooledByteBufAllocator(true);
        SplitBody split = new SplitBody("test", 0, LENGTHS.clone(), allocator);
        CompletableFuture<List<ByteBuf>> first = split.prepare();
        split.onResponse(response(null));
        List<ByteBuffer> all = chunks(body, TOTAL);
        List<ByteBuf> seen = new ArrayList<>();
        // Half the body, then the connection fails: the SDK reports it through exceptionOccurred.
        split.onStream(subscriber -> SdkPublisher.fromIterable(all.subList(0, all.size() / 2)).subscribe(
                new org.reactivestreams.Subscriber<>() {
                    @Override
                    public void onSubscribe(org.reactivestreams.Subscription s) {
                        subscriber.onSubscribe(s);
                    }

                    @Override
                    public void onNext(ByteBuffer b) {
                        subscriber.onNext(b);
                    }

                    @Override
                    public void onError(Throwable t) {
                        subscriber.onError(t);
                    }

                    @Override
                    public void onComplete() {
                        // the stream stops without completing: the failure comes from the SDK below
                    }
                }));
        split.exceptionOccurred(new java.io.IOException("connection reset"));
        assertThat(first).isCompletedExceptionally();
        assertThat(allocator.metric().usedDirectMemory()).as("the failed attempt's buffers").isZero();

        CompletableFuture<List<ByteBuf>> second = split.prepare();
        split.onResponse(response(null));
        split.onStream(SdkPublisher.fromIterable(chunks(body, TOTAL)));
        seen.addAll(second.get());
        assertThat(seen).extracting(ByteBuf::readableBytes).containsExactly(5, 1, 300, 64, 30);
        assertThat(allocator.metric().usedDirectMemory()).isEqualTo(TOTAL);
        seen.forEach(ByteBuf::release);
        assertThat(allocator.metric().usedDirectMemory()).isZero();
    }

    @Test
    void aClippedReadHoldsWhatTheObjectHasOfItsRangeInOneDirectBuffer() throws Exception {
        UnpooledByteBufAllocator allocator = new UnpooledByteBufAllocator(true);
        // The whole range inside the object, then a range running 100 bytes past the object's end.
        for (int inside : new int[] {TOTAL, TOTAL - 100}) {
            SplitBody read = SplitBody.clipped("test", 1000, TOTAL, allocator);
            CompletableFuture<List<ByteBuf>> result = read.prepare();
            long size = inside == TOTAL ? 5000 : 1000 + inside;
            read.onResponse(response("bytes 1000-" + (1000 + inside - 1) + "/" + size));
            read.onStream(SdkPublisher.fromIterable(chunks(body, inside)));
            ByteBuf buf = result.get().getFirst();
            assertThat(buf.isDirect()).isTrue();
            assertThat(buf.capacity()).as("allocated for what arrives, not for the range").isEqualTo(inside);
            byte[] got = new byte[buf.readableBytes()];
            buf.readBytes(got);
            assertThat(got).isEqualTo(Arrays.copyOf(body, inside));
            buf.release();
        }
        // A server that ignores Range answers 200 with the whole (shorter) object: a read from 0 takes it.
        SplitBody read = SplitBody.clipped("test", 0, TOTAL, allocator);
        CompletableFuture<List<ByteBuf>> result = read.prepare();
        read.onResponse(GetObjectResponse.builder().contentLength(40L).build());
        read.onStream(SdkPublisher.fromIterable(chunks(body, 40)));
        assertThat(result.get().getFirst().readableBytes()).isEqualTo(40);
        result.get().getFirst().release();
        assertThat(allocator.metric().usedDirectMemory()).isZero();
    }

    @Test
    void aClippedReadCutShortIsRetriableAndOneRunningOnIsNeverData() {
        SplitBody read = SplitBody.clipped("test", 1000, TOTAL, new UnpooledByteBufAllocator(true));
        CompletableFuture<List<ByteBuf>> result = read.prepare();
        read.onResponse(response("bytes 1000-1299/1300")); // 300 bytes of the object in the range; 200 arrive
        read.onStream(SdkPublisher.fromIterable(chunks(body, 200)));
        ObjectStoreException e = failure(result);
        assertThat(e.isRetriable()).isTrue();
        assertThat(e.getMessage()).contains("ended after 200 bytes").doesNotContain("where the object ends");

        read = SplitBody.clipped("test", 1000, TOTAL, new UnpooledByteBufAllocator(true));
        result = read.prepare();
        read.onResponse(response("bytes 1000-1299/1300"));
        read.onStream(SdkPublisher.fromIterable(chunks(body, 310))); // more than the headers said the object has
        e = failure(result);
        assertThat(e.isRetriable()).isTrue();
        assertThat(e.getMessage()).contains("went on past its 300 bytes");
    }

    @Test
    void aClippedReadWithoutSizeHeadersBuffersItsRangeOnlyWhenSmall() throws Exception {
        SplitBody small = SplitBody.clipped("test", 1000, TOTAL, new UnpooledByteBufAllocator(true));
        CompletableFuture<List<ByteBuf>> result = small.prepare();
        small.onResponse(response(null)); // neither Content-Range nor Content-Length (a chunked 206)
        small.onStream(SdkPublisher.fromIterable(chunks(body, TOTAL)));
        assertThat(result.get().getFirst().readableBytes()).isEqualTo(TOTAL);
        result.get().getFirst().release();

        SplitBody large = SplitBody.clipped("test", 1000, (int) SplitBody.UNSIZED_LIMIT + 1,
                new UnpooledByteBufAllocator(true));
        result = large.prepare();
        large.onResponse(response(null));
        boolean[] cancelled = {false};
        large.onStream(subscriber -> subscriber.onSubscribe(new org.reactivestreams.Subscription() {
            @Override
            public void request(long n) {
                throw new AssertionError("a refused body is not requested");
            }

            @Override
            public void cancel() {
                cancelled[0] = true;
            }
        }));
        ObjectStoreException e = failure(result);
        assertThat(e.isRetriable()).isFalse();
        assertThat(e.getMessage()).contains("neither Content-Range nor Content-Length");
        assertThat(cancelled[0]).isTrue();
    }

    /** The first {@code length} bytes of {@code bytes} in chunks of random sizes (1 to 97 bytes). */
    private List<ByteBuffer> chunks(byte[] bytes, int length) {
        List<ByteBuffer> out = new ArrayList<>();
        for (int at = 0; at < length; ) {
            int n = Math.min(length - at, 1 + random.nextInt(97));
            out.add(ByteBuffer.wrap(bytes, at, n).slice());
            at += n;
        }
        return out;
    }

    private static GetObjectResponse response(String contentRange) {
        return GetObjectResponse.builder().contentRange(contentRange).build();
    }

    private static ObjectStoreException failure(CompletableFuture<?> result) {
        try {
            result.get();
            throw new AssertionError("expected a failure");
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(ObjectStoreException.class);
            return (ObjectStoreException) e.getCause();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
