package io.s3stream.internal.store;

/**
 * Bounds retries to a share of successful traffic, so that a store that fails everything gets about one request per
 * caller instead of {@code maxAttempts} each: a retry spends one token; a success earns {@code refundPerSuccess} of a
 * token, up to {@code maxTokens}. With the budget spent, a retriable failure is returned to the caller at once; the
 * engine's upload loop then pauses and tries again later, which appends feel as back-pressure (a retry storm would
 * only add load to a store that is already failing).
 *
 * <p>First attempts are never budgeted: as soon as the store recovers, successes refill the budget.
 */
final class RetryBudget {
    private final double maxTokens;
    private final double refundPerSuccess;
    private double tokens; // guarded by this

    RetryBudget(double maxTokens, double refundPerSuccess) {
        this.maxTokens = maxTokens;
        this.refundPerSuccess = refundPerSuccess;
        this.tokens = maxTokens;
    }

    synchronized boolean tryAcquire() {
        if (tokens >= 1) {
            tokens -= 1;
            return true;
        }
        return false;
    }

    synchronized void onSuccess() {
        tokens = Math.min(maxTokens, tokens + refundPerSuccess);
    }

    synchronized double tokens() {
        return tokens;
    }
}
