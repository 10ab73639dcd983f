package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.netty.util.internal.logging.JdkLoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Collects the leak reports of Netty's {@link ResourceLeakDetector} (run at PARANOID by surefire) so a test can
 * fail on them instead of only logging them.
 */
public final class LeakWatch {

    private static final List<String> REPORTS = new ArrayList<>();
    private static boolean installed;

    private LeakWatch() {
    }

    /** Starts collecting; call before allocating anything the test wants checked. */
    public static synchronized void install() {
        if (installed) {
            return;
        }
        assertThat(InternalLoggerFactory.getDefaultFactory())
                .as("Netty must log through java.util.logging for LeakWatch to see leak reports")
                .isInstanceOf(JdkLoggerFactory.class);
        assertThat(ResourceLeakDetector.getLevel()).isEqualTo(ResourceLeakDetector.Level.PARANOID);
        Logger logger = Logger.getLogger(ResourceLeakDetector.class.getName());
        logger.addHandler(new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel().intValue() >= Level.SEVERE.intValue()
                        && String.valueOf(record.getMessage()).contains("LEAK")) {
                    synchronized (LeakWatch.class) {
                        REPORTS.add(record.getMessage());
                    }
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        });
        installed = true;
    }

    /**
     * Forces collection of unreachable buffers and lets the detector report them; fails if any leaked since
     * {@link #install()}.
     */
    public static void assertNoLeaks() throws InterruptedException {
        for (int round = 0; round < 5; round++) {
            System.gc();
            Thread.sleep(20);
            // The detector polls its reference queue when it tracks a new buffer.
            for (int i = 0; i < 8; i++) {
                ByteBuf probe = PooledByteBufAllocator.DEFAULT.directBuffer(8);
                probe.release();
            }
        }
        List<String> found;
        synchronized (LeakWatch.class) {
            found = List.copyOf(REPORTS);
            REPORTS.clear();
        }
        assertThat(found).as("Netty leak reports").isEmpty();
    }
}
