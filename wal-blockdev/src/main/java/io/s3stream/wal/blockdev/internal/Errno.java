package io.s3stream.wal.blockdev.internal;

/**
 * Linux errno values the WAL reports precisely. A table rather than {@code strerror}, which is not thread-safe and
 * whose text depends on the locale.
 */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int ENODEV = 19;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int EROFS = 30;
    public static final int ENOTTY = 25;
    public static final int ENAMETOOLONG = 36;
    public static final int ELOOP = 40;
    public static final int EOPNOTSUPP = 95;
    public static final int EDQUOT = 122;

    private Errno() {
    }

    /** {@code "EIO (errno 5, input/output error)"}. */
    public static String describe(int errno) {
        String[] e = switch (errno) {
            case EPERM -> new String[]{"EPERM", "operation not permitted"};
            case ENOENT -> new String[]{"ENOENT", "no such file or directory"};
            case EINTR -> new String[]{"EINTR", "interrupted system call"};
            case EIO -> new String[]{"EIO", "input/output error"};
            case ENXIO -> new String[]{"ENXIO", "no such device or address"};
            case EBADF -> new String[]{"EBADF", "bad file descriptor"};
            case EAGAIN -> new String[]{"EAGAIN", "resource temporarily unavailable"};
            case ENOMEM -> new String[]{"ENOMEM", "out of memory"};
            case EACCES -> new String[]{"EACCES", "permission denied"};
            case EFAULT -> new String[]{"EFAULT", "bad address"};
            case EBUSY -> new String[]{"EBUSY", "device or resource busy"};
            case EEXIST -> new String[]{"EEXIST", "file exists"};
            case ENODEV -> new String[]{"ENODEV", "no such device"};
            case ENOTDIR -> new String[]{"ENOTDIR", "not a directory"};
            case EISDIR -> new String[]{"EISDIR", "is a directory"};
            case EINVAL -> new String[]{"EINVAL", "invalid argument (for direct IO: misaligned buffer, offset or "
                    + "length, or a file system without O_DIRECT)"};
            case ENOTTY -> new String[]{"ENOTTY", "inappropriate ioctl for device"};
            case EFBIG -> new String[]{"EFBIG", "file too large"};
            case ENOSPC -> new String[]{"ENOSPC", "no space left on device"};
            case EROFS -> new String[]{"EROFS", "read-only file system"};
            case ENAMETOOLONG -> new String[]{"ENAMETOOLONG", "file name too long"};
            case ELOOP -> new String[]{"ELOOP", "too many levels of symbolic links"};
            case EOPNOTSUPP -> new String[]{"EOPNOTSUPP", "operation not supported"};
            case EDQUOT -> new String[]{"EDQUOT", "disk quota exceeded"};
            default -> new String[]{"errno " + errno, "see errno(3)"};
        };
        return e[0].startsWith("errno") ? e[0] : e[0] + " (errno " + errno + ", " + e[1] + ")";
    }
}
