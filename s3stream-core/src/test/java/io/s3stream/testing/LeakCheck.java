package io.s3stream.testing;

import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Turns Netty's leak reports into test failures. Netty only logs leaks; this installs a detector factory that records
 * them, and {@link #assertNoLeaks()} forces collection and fails with the recorded access traces.
 *
 * <p>The factory must be in place before the first {@code ByteBuf} class initialises, so it is installed by
 * {@link LeakCheckExtension} (auto-registered for every JUnit Jupiter test), and by {@link #install()} in the static
 * initialiser of test classes that build buffers before any extension runs.
 */
public final class LeakCheck {
    private static final ConcurrentLinkedQueue<String> LEAKS = new ConcurrentLinkedQueue<>();
    private static volatile boolean installed;

    private LeakCheck() {
    }

    /** Installs the recording factory (idempotent) and sets the detector to PARANOID. */
    public static synchronized void install() {
        if (installed) {
            return;
        }
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingFactory());
        installed = true;
    }

    /**
     * Collects garbage, lets Netty's detector poll its queue (it does so when a new buffer is tracked) and fails if any
     * leak was reported since the last call.
     */
    public static void assertNoLeaks() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            // Allocating a tracked buffer makes the detector drain its reference queue and report.
            io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(1).release();
            io.netty.buffer.UnpooledByteBufAllocator.DEFAULT.heapBuffer(1).release();
        }
        List<String> found = new ArrayList<>();
        String leak;
        while ((leak = LEAKS.poll()) != null) {
            found.add(leak);
        }
        if (!found.isEmpty()) {
            throw new AssertionError(found.size() + " Netty buffer leak(s) detected:\n" + String.join("\n----\n", found));
        }
    }

    private static final class RecordingFactory extends ResourceLeakDetectorFactory {
        @SuppressWarnings("deprecation") // the abstract factory method Netty still requires implementations to override
        @Override
        public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                                                                   long maxActive) {
            return new RecordingDetector<>(resource, samplingInterval);
        }
    }

    private static final class RecordingDetector<T> extends ResourceLeakDetector<T> {
        RecordingDetector(Class<T> resource, int samplingInterval) {
            super(resource, samplingInterval);
        }

        @Override
        protected void reportTracedLeak(String resourceType, String records) {
            LEAKS.add("LEAK: " + resourceType + " released too few times" + records);
            super.reportTracedLeak(resourceType, records);
        }

        @Override
        protected void reportUntracedLeak(String resourceType) {
            LEAKS.add("LEAK: " + resourceType + " released too few times (no trace)");
            super.reportUntracedLeak(resourceType);
        }
    }
}
