package io.s3stream;

/**
 * A bounded resource (the log cache, the write-ahead log, an object-store retry budget) stayed full for longer
 * than the configured wait, so the append was refused. Nothing was written; nothing acknowledged was dropped.
 * <p>What to do: back off and retry. Sustained, it means the object store cannot absorb the write rate: check
 * its health, or raise the budgets named in the message.
 */
public final class OverCapacityException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public OverCapacityException(String message) {
        super(message);
    }

    @Override
    public boolean isRetriable() {
        return true;
    }
}
