package io.s3stream.kafka.shell.network;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One family of Kafka APIs answered by one handler: produce, fetch, the group APIs, the topic admin APIs... The
 * {@link ApiDispatcher} routes each request to the family that declares its key, once its version is in the declared
 * range, so adding an API is adding it to a family (or a new family) and to nothing else.
 */
public interface ApiFamily {
    /** The keys this family answers, each with the [min, max] versions that ApiVersions advertises. */
    Map<ApiKeys, short[]> versions();

    /**
     * Answers one request of a declared key and version; the future's value is null when no response is sent
     * (produce with acks=0). A failed future becomes the request's error response.
     */
    CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request);

    /**
     * The failure a future completed with, without the {@link java.util.concurrent.CompletionException} and
     * {@link java.util.concurrent.ExecutionException} wrappers of dependent stages: what an error code is made from.
     */
    static Throwable cause(Throwable failure) {
        Throwable t = failure;
        while ((t instanceof java.util.concurrent.CompletionException
                || t instanceof java.util.concurrent.ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** A completed answer, for the handlers that answer without waiting. */
    static CompletableFuture<AbstractResponse> done(AbstractResponse response) {
        return CompletableFuture.completedFuture(response);
    }

    /** A version table from pairs of key and [min, max]: {@code versions(PRODUCE, 3, 12, INIT_PRODUCER_ID, 0, 5)}. */
    static Map<ApiKeys, short[]> versions(Object... keyMinMax) {
        Map<ApiKeys, short[]> out = new EnumMap<>(ApiKeys.class);
        for (int i = 0; i < keyMinMax.length; i += 3) {
            out.put((ApiKeys) keyMinMax[i], new short[] {((Integer) keyMinMax[i + 1]).shortValue(),
                    ((Integer) keyMinMax[i + 2]).shortValue()});
        }
        return out;
    }
}
