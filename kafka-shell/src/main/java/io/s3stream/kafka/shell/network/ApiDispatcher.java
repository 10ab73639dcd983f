package io.s3stream.kafka.shell.network;

import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The dispatch table: every Kafka API the shell answers, by key, to the {@link ApiFamily} that answers it. It is the
 * single source of what ApiVersions advertises and of what is accepted: a version outside a family's declared range
 * gets UNSUPPORTED_VERSION, a failed answer the request's error response (logged with its key and version).
 */
public final class ApiDispatcher {
    private static final System.Logger LOG = System.getLogger(ApiDispatcher.class.getName());
    private static final short[] API_VERSIONS = {0, 4};

    private final Map<ApiKeys, ApiFamily> byKey = new EnumMap<>(ApiKeys.class);
    private final Map<ApiKeys, short[]> versions = new EnumMap<>(ApiKeys.class);
    private final RequestObserver observer;
    private final Throttle throttle;
    private final Guard guard;

    /**
     * Refuses a whole request before its family answers it (authorization of the group, transactional id or cluster
     * it is for): the refusal is answered, and throttled, as any response.
     */
    @FunctionalInterface
    public interface Guard {
        Guard NONE = (ctx, request) -> null;

        /** The response that refuses {@code request}, or null to let its family answer. */
        AbstractResponse denied(RequestContext ctx, AbstractRequest request);
    }

    /**
     * Decides, once a request is answered, how long its client must wait (quotas): the time goes into the response's
     * {@code throttle_time_ms} and the connection is not read for that long.
     */
    @FunctionalInterface
    public interface Throttle {
        Throttle NONE = (ctx, request, response) -> 0;

        /** {@code response} is null for a request answered without a response (produce with acks=0). */
        int throttleMs(RequestContext ctx, AbstractRequest request, AbstractResponse response);
    }

    /** Told how long each answered request took, from dispatch to its response (metrics). */
    @FunctionalInterface
    public interface RequestObserver {
        RequestObserver NONE = (key, nanos) -> { };

        void completed(ApiKeys key, long nanos);
    }

    /** @throws IllegalArgumentException when two families declare the same key */
    public ApiDispatcher(List<ApiFamily> families) {
        this(families, RequestObserver.NONE);
    }

    /** @throws IllegalArgumentException when two families declare the same key */
    public ApiDispatcher(List<ApiFamily> families, RequestObserver observer) {
        this(families, observer, Throttle.NONE);
    }

    /** @throws IllegalArgumentException when two families declare the same key */
    public ApiDispatcher(List<ApiFamily> families, RequestObserver observer, Throttle throttle) {
        this(families, observer, throttle, Guard.NONE);
    }

    /** @throws IllegalArgumentException when two families declare the same key */
    public ApiDispatcher(List<ApiFamily> families, RequestObserver observer, Throttle throttle, Guard guard) {
        this.observer = observer;
        this.throttle = throttle;
        this.guard = guard;
        versions.put(ApiKeys.API_VERSIONS, API_VERSIONS);
        for (ApiFamily family : families) {
            family.versions().forEach((key, range) -> {
                if (versions.putIfAbsent(key, range) != null) {
                    throw new IllegalArgumentException(key + " is declared by two API families");
                }
                byKey.put(key, family);
            });
        }
    }

    /**
     * Adds SaslHandshake and SaslAuthenticate v0–2 to what ApiVersions advertises, on a SASL listener (the connection
     * handler answers them; call before serving). SaslHandshake v0 is advertised because librdkafka looks for it, but
     * its raw-token exchange is not spoken: clients that can use v1 (all current ones) do.
     */
    public void advertiseSasl() {
        versions.put(ApiKeys.SASL_HANDSHAKE, new short[] {0, 1});
        versions.put(ApiKeys.SASL_AUTHENTICATE, new short[] {0, 2});
    }

    /** Whether {@code version} of {@code key} is answered. */
    public boolean supports(ApiKeys key, short version) {
        short[] range = versions.get(key);
        return range != null && version >= range[0] && version <= range[1];
    }

    /** Answers one request; the future's value is null when no response is sent (produce with acks=0). */
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        ApiKeys key = ctx.header.apiKey();
        short version = ctx.header.apiVersion();
        if (key == ApiKeys.API_VERSIONS) {
            return CompletableFuture.completedFuture(apiVersions((ApiVersionsRequest) request));
        }
        if (!supports(key, version)) {
            return CompletableFuture.completedFuture(request.getErrorResponse(0, Errors.UNSUPPORTED_VERSION.exception()));
        }
        if (!byKey.containsKey(key)) {
            // SaslHandshake / SaslAuthenticate on a listener without SASL (a SASL one answers them before dispatch).
            return CompletableFuture.completedFuture(request.getErrorResponse(0,
                    Errors.ILLEGAL_SASL_STATE.exception("this listener does not authenticate with SASL")));
        }
        long start = System.nanoTime();
        CompletableFuture<AbstractResponse> response;
        try {
            AbstractResponse refused = guard.denied(ctx, request);
            response = refused != null ? CompletableFuture.completedFuture(refused) : byKey.get(key).handle(ctx, request);
        } catch (RuntimeException e) {
            response = CompletableFuture.failedFuture(e);
        }
        return response.exceptionally(e -> {
            Throwable cause = ApiFamily.cause(e);
            LOG.log(System.Logger.Level.WARNING, () -> key + " v" + version + " failed", cause);
            return request.getErrorResponse(0, cause);
        }).thenApply(r -> {
            int ms = throttle.throttleMs(ctx, request, r);
            if (ms > 0 && r != null) {
                r.maybeSetThrottleTimeMs(ms);
            }
            return r;
        }).whenComplete((r, e) -> observer.completed(key, System.nanoTime() - start));
    }

    private ApiVersionsResponse apiVersions(ApiVersionsRequest request) {
        ApiVersionsResponseData.ApiVersionCollection keys = new ApiVersionsResponseData.ApiVersionCollection();
        versions.forEach((k, v) -> keys.add(new ApiVersionsResponseData.ApiVersion()
                .setApiKey(k.id).setMinVersion(v[0]).setMaxVersion(v[1])));
        Errors error = request.hasUnsupportedRequestVersion() ? Errors.UNSUPPORTED_VERSION
                : request.isValid() ? Errors.NONE : Errors.INVALID_REQUEST;
        return new ApiVersionsResponse(new ApiVersionsResponseData().setErrorCode(error.code()).setApiKeys(keys));
    }
}
