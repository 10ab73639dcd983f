package io.s3stream;

/**
 * A setting has a value the library cannot work with. The message names the setting and the accepted range.
 * <p>What to do: fix the configuration; nothing was started.
 */
public final class InvalidConfigException extends S3StreamException {
    private static final long serialVersionUID = 1L;

    public InvalidConfigException(String message) {
        super(message);
    }

    public InvalidConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
