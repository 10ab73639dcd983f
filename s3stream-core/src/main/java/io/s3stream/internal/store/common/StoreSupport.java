package io.s3stream.internal.store.common;

import io.netty.buffer.ByteBuf;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.spi.UriSettings;

import java.net.URI;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Small helpers shared by the local object stores: key order, range checks, URI query settings and the failures
 * every backend reports the same way.
 *
 * <p>Design note: keys are ordered by Unicode code point, which is the order of their UTF-8 bytes and therefore the
 * order in which S3 lists them. {@link String#compareTo} orders by UTF-16 unit and would disagree for characters
 * outside the Basic Multilingual Plane.
 */
public final class StoreSupport {
    /** S3's limit on part numbers; the local stores enforce it so that tests catch what S3 would refuse. */
    public static final int MAX_PART_NUMBER = 10_000;
    /** The part-size floor S3 enforces for every part but the last. */
    public static final int DEFAULT_MIN_PART_SIZE_BYTES = 5 * 1024 * 1024;

    /** Code point (equivalently UTF-8 byte) order of keys. */
    public static final Comparator<String> KEY_ORDER = StoreSupport::compareKeys;

    private StoreSupport() {
    }

    public static int compareKeys(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i);
            int cb = b.codePointAt(j);
            if (ca != cb) {
                return Integer.compare(ca, cb);
            }
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    public static <T> CompletableFuture<T> failed(String message) {
        return CompletableFuture.failedFuture(new ObjectStoreException(message, false));
    }

    /** Checks a ranged read's arguments; the object's size is checked later, against the object. */
    public static void checkRangeArguments(String description, String key, long position, int length) {
        if (position < 0 || length < 0) {
            throw new ObjectStoreException(description + ": invalid range of '" + key + "': position " + position
                    + ", length " + length + " (both must be >= 0)", false);
        }
    }

    /**
     * The object's size a {@code Content-Range} header ({@code bytes first-last/size}) gives, or -1 when there is no
     * header, the size is unknown ({@code *}) or the header is malformed.
     */
    public static long sizeFromContentRange(String contentRange) {
        int slash = contentRange == null ? -1 : contentRange.lastIndexOf('/');
        if (slash <= 0 || contentRange.endsWith("*")) {
            return -1;
        }
        try {
            return Long.parseLong(contentRange.substring(slash + 1).trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The number of bytes a ranged read returns after clipping, or an exception when it starts at or past the end. */
    public static int clipRange(String description, String key, long sizeBytes, long position, int length) {
        if (position >= sizeBytes) {
            throw new ObjectStoreException(description + ": range of '" + key + "' starts at " + position
                    + ", at or past the object's end (" + sizeBytes + " bytes)", false);
        }
        return (int) Math.min(length, sizeBytes - position);
    }

    public static void checkPartNumber(String description, String key, int partNumber) {
        if (partNumber < 1 || partNumber > MAX_PART_NUMBER) {
            throw new ObjectStoreException(description + ": part number " + partNumber + " of multipart upload of '"
                    + key + "' is outside [1, " + MAX_PART_NUMBER + "]", false);
        }
    }

    public static void checkCopyRange(String description, String sourceKey, long sourceSize, long position, long length) {
        if (position < 0 || length <= 0 || position + length > sourceSize) {
            throw new ObjectStoreException(description + ": copy range [" + position + ", " + (position + length)
                    + ") is outside source '" + sourceKey + "' of " + sourceSize + " bytes", false);
        }
    }

    /**
     * Reads the readable bytes of a caller's buffer without moving its reader index or touching its reference count.
     */
    public static byte[] copyReadable(ByteBuf data) {
        byte[] bytes = new byte[data.readableBytes()];
        data.getBytes(data.readerIndex(), bytes);
        return bytes;
    }

    /**
     * The {@code minPartSizeBytes} query setting of a store URI (for tests that want small multipart uploads), or
     * S3's 5 MiB. Unknown settings are refused so that a typo does not pass silently.
     */
    public static int minPartSizeBytes(URI uri) {
        return minPartSizeBytes(uri, List.of());
    }

    /** {@link #minPartSizeBytes(URI)} for a store whose URI may also hold {@code otherSettings}, read elsewhere. */
    public static int minPartSizeBytes(URI uri, List<String> otherSettings) {
        int minPartSizeBytes = DEFAULT_MIN_PART_SIZE_BYTES;
        for (Map.Entry<String, String> setting : UriSettings.query(uri).entrySet()) {
            String name = setting.getKey();
            String value = setting.getValue();
            if (otherSettings.contains(name)) {
                continue;
            }
            if (!name.equals("minPartSizeBytes")) {
                throw new ObjectStoreException(UriSettings.withoutQuery(uri) + ": unknown setting '" + name
                        + (otherSettings.isEmpty() ? "' (the only setting is minPartSizeBytes)"
                        : "' (the settings are minPartSizeBytes, " + String.join(", ", otherSettings) + ")"), false);
            }
            try {
                minPartSizeBytes = Integer.parseInt(value);
            } catch (NumberFormatException e) {
                minPartSizeBytes = -1;
            }
            if (minPartSizeBytes < 1) {
                throw new ObjectStoreException(UriSettings.withoutQuery(uri) + ": minPartSizeBytes must be a positive integer, was '" + value
                        + "'", false);
            }
        }
        return minPartSizeBytes;
    }
}
