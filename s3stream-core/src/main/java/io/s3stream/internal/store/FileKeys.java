package io.s3stream.internal.store;

import java.nio.charset.StandardCharsets;

/**
 * The keys of a {@link FileObjectStore} and the file names that stand for them.
 *
 * <p>Keys must be safe relative paths: no leading {@code '/'}, no empty, {@code "."} or {@code ".."} segments, no
 * backslash, no unpaired surrogate, no segment starting with {@value FileObjectStore#RESERVED_PREFIX}, at most
 * {@value #MAX_SEGMENT_BYTES} bytes per (encoded) segment. Printable ASCII other than {@code '%'} maps to file names
 * verbatim, so the usual keys are readable on disk; every other character is written as {@code %XX} escapes of its
 * UTF-8 bytes, because the JVM cannot create non-ASCII file names when the process runs in the C/POSIX locale.
 */
final class FileKeys {
    /** Longest file name of one (encoded) key segment: the usual file-system limit. */
    static final int MAX_SEGMENT_BYTES = 255;
    /** Longest key in UTF-8 bytes, as on S3. */
    static final int MAX_KEY_BYTES = 1024;
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private FileKeys() {
    }

    /** The relative file path of a (valid) key: each segment's characters outside printable ASCII, and '%', escaped. */
    static String encodePath(String key) {
        StringBuilder path = null;
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < 0x20 || c >= 0x7F || c == '%') {
                path = new StringBuilder(key.length() + 16).append(key, 0, i);
                for (byte b : key.substring(i).getBytes(StandardCharsets.UTF_8)) {
                    int u = b & 0xFF;
                    if (u < 0x20 || u >= 0x7F || u == '%') {
                        path.append('%').append(HEX[u >>> 4]).append(HEX[u & 0xF]);
                    } else {
                        path.append((char) u);
                    }
                }
                break;
            }
        }
        return path == null ? key : path.toString();
    }

    /** The key segment a file name stands for; names that are not valid escapes are taken literally. */
    static String decodeName(String name) {
        if (name.indexOf('%') < 0) {
            return name;
        }
        byte[] bytes = new byte[name.length()];
        int n = 0;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            int high = c == '%' && i + 2 < name.length() ? Character.digit(name.charAt(i + 1), 16) : -1;
            int low = high >= 0 ? Character.digit(name.charAt(i + 2), 16) : -1;
            if (low >= 0) {
                bytes[n++] = (byte) (high * 16 + low);
                i += 2;
            } else if (c < 0x80) {
                bytes[n++] = (byte) c;
            } else {
                return name; // not written by this store
            }
        }
        return new String(bytes, 0, n, StandardCharsets.UTF_8);
    }

    /** Why {@code key} cannot be stored, or null when it can. */
    static String keyProblem(String key) {
        if (key == null || key.isEmpty()) {
            return "a key must not be empty";
        }
        if (key.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
            return "longer than " + MAX_KEY_BYTES + " bytes";
        }
        if (key.indexOf('\\') >= 0) {
            return "backslashes are not allowed";
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return "an unpaired surrogate at index " + i + " is not valid Unicode";
            }
        }
        if (key.startsWith("/")) {
            return "a key must not start with '/'";
        }
        for (String segment : key.split("/", -1)) {
            String problem = segmentProblem(segment);
            if (problem != null) {
                return problem;
            }
        }
        return null;
    }

    private static String segmentProblem(String segment) {
        if (segment.isEmpty()) {
            return "empty path segments ('//' or a trailing '/') are not allowed";
        }
        if (segment.equals(".") || segment.equals("..")) {
            return "'" + segment + "' segments are not allowed";
        }
        if (segment.startsWith(FileObjectStore.RESERVED_PREFIX)) {
            return "segments starting with '" + FileObjectStore.RESERVED_PREFIX + "' are reserved for the store's own files";
        }
        if (encodePath(segment).length() > MAX_SEGMENT_BYTES) {
            return "a segment is longer than " + MAX_SEGMENT_BYTES + " bytes as a file name";
        }
        return null;
    }

    static String printable(String key) {
        return key == null ? "null" : key.replace("\0", "\\0");
    }
}
