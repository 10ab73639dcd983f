package io.s3stream.internal.engine;

import com.sun.management.HotSpotDiagnosticMXBean;

import java.lang.management.ManagementFactory;

/**
 * The JVM's limit on direct (off-heap) memory, from which the default cache budgets are derived and against which
 * configured budgets are checked at startup.
 *
 * <p>Design note: the limit is {@code -XX:MaxDirectMemorySize} when set and the maximum heap size otherwise, which is
 * what the JDK itself enforces for direct buffers (and what Netty's allocators follow by default). It is read through
 * the public {@code HotSpotDiagnosticMXBean}; on a JVM without it the heap maximum is the answer, as in the JDK.
 */
public final class MemoryLimits {
    private MemoryLimits() {
    }

    /** The JVM's direct-memory limit in bytes. */
    public static long maxDirectMemoryBytes() {
        try {
            HotSpotDiagnosticMXBean bean = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            if (bean != null) {
                long configured = Long.parseLong(bean.getVMOption("MaxDirectMemorySize").getValue());
                if (configured > 0) {
                    return configured;
                }
            }
        } catch (RuntimeException | LinkageError e) {
            // fall through to the JDK's own default
        }
        return Runtime.getRuntime().maxMemory();
    }

    /** {@code fraction} of {@code limit}, clamped to {@code [min, max]}. */
    public static long share(long limit, double fraction, long min, long max) {
        return Math.max(min, Math.min(max, (long) (limit * fraction)));
    }
}
