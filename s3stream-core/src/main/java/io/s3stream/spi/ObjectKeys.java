package io.s3stream.spi;

/**
 * Object keys. Data keys start with a hash-derived prefix so that consecutive ids spread over the store's key-space
 * partitions (S3 scales request rates per prefix).
 */
public final class ObjectKeys {
    private ObjectKeys() {
    }

    /** {@code data/<4 hex digits of a hash of the id>/<id as 16 hex digits>}. */
    public static String dataKey(long objectId) {
        long h = objectId * 0x9E3779B97F4A7C15L; // Fibonacci hashing: neighbouring ids land far apart
        return String.format("data/%04x/%016x", (h >>> 48) & 0xFFFF, objectId);
    }
}
