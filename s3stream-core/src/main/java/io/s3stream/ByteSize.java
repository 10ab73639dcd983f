package io.s3stream;

import java.util.Locale;

/**
 * Byte sizes as settings spell them: {@code 4096}, {@code 64KiB}, {@code 512MiB}, {@code 2GiB}, {@code 1TiB};
 * KB/MB/GB/TB and K/M/G/T are read as binary units too. The one parser behind {@link StorageConfig.Builder#set} and
 * the URI parameters of backends ({@link io.s3stream.spi.UriSettings}).
 */
public final class ByteSize {
    private static final String[] SUFFIXES = {"TIB", "TB", "T", "GIB", "GB", "G", "MIB", "MB", "M", "KIB", "KB", "K",
            "B"};
    private static final long[] FACTORS = {1L << 40, 1L << 40, 1L << 40, 1L << 30, 1L << 30, 1L << 30, 1L << 20,
            1L << 20, 1L << 20, 1L << 10, 1L << 10, 1L << 10, 1};

    private ByteSize() {
    }

    /**
     * A positive byte size.
     *
     * @param where names the setting in the error, for example a URI and its parameter, or a configuration key
     * @throws InvalidConfigException naming {@code where} when {@code value} is not a positive size
     */
    public static long parse(String where, String value) {
        String v = value.trim().toUpperCase(Locale.ROOT);
        long unit = 1;
        for (int i = 0; i < SUFFIXES.length; i++) {
            if (v.endsWith(SUFFIXES[i])) {
                unit = FACTORS[i];
                v = v.substring(0, v.length() - SUFFIXES[i].length()).trim();
                break;
            }
        }
        try {
            long n = Long.parseLong(v);
            if (n <= 0 || n > Long.MAX_VALUE / unit) {
                throw new NumberFormatException("out of range");
            }
            return n * unit;
        } catch (NumberFormatException e) {
            throw new InvalidConfigException(where + " must be a positive byte size such as 4096, 64MiB or 2GiB, was '"
                    + value + "'", e);
        }
    }
}
