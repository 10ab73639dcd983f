package io.s3stream.internal.util;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Small helpers for {@link java.util.concurrent.CompletableFuture}s, so that unwrapping is written once. */
public final class Futures {
    private Futures() {
    }

    /**
     * The failure a future completed with: {@code error} without the {@link CompletionException} and
     * {@link ExecutionException} wrappers that {@code join}, {@code get} and dependent stages add.
     */
    public static Throwable unwrap(Throwable error) {
        Throwable t = error;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** {@link #unwrap}, as an unchecked exception to rethrow: itself if unchecked, else wrapped once. */
    public static RuntimeException unwrapUnchecked(Throwable error) {
        Throwable t = unwrap(error);
        if (t instanceof RuntimeException re) {
            return re;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new CompletionException(t);
    }

    /** Whether {@code error} or one of its causes is of {@code type}. */
    public static boolean hasCause(Throwable error, Class<? extends Throwable> type) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return true;
            }
        }
        return false;
    }
}
