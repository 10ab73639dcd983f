package io.s3stream.spi;

/**
 * Object keys. Data keys start with a hash-derived prefix so that consecutive ids spread over the store's key-space
 * partitions (S3 scales request rates per prefix).
 */
public final class ObjectKeys {
    private static final int DATA_KEY_LENGTH = "data/0000/0000000000000000".length();

    private ObjectKeys() {
    }

    /** {@code data/<4 hex digits of a hash of the id>/<id as 16 hex digits>}. */
    public static String dataKey(long objectId) {
        long h = objectId * 0x9E3779B97F4A7C15L; // Fibonacci hashing: neighbouring ids land far apart
        return String.format("data/%04x/%016x", (h >>> 48) & 0xFFFF, objectId);
    }

    /**
     * Whether {@code key} names a data object: it ends with a key of {@link #dataKey}'s form, under any prefix (a store
     * shared through a key prefix sees {@code <prefix>data/...}).
     */
    public static boolean isDataKey(String key) {
        int at = key.length() - DATA_KEY_LENGTH;
        if (at < 0 || !key.startsWith("data/", at) || (at > 0 && key.charAt(at - 1) != '/')
                || key.charAt(at + 9) != '/') {
            return false;
        }
        return isHex(key, at + 5, at + 9) && isHex(key, at + 10, key.length());
    }

    private static boolean isHex(String s, int from, int to) {
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) {
                return false;
            }
        }
        return true;
    }
}
