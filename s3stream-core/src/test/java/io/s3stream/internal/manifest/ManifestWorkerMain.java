package io.s3stream.internal.manifest;

import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectStore;

import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A manifest writer in its own JVM, started by {@link ManifestMultiProcessTest} and {@link ManifestCrashTest}.
 * Arguments: {@code <object store URI> <mode> <worker id> <iterations>}. Modes:
 * <ul>
 *   <li>{@code count}: {@code iterations} times, increments the shared key {@code counter} by compare-and-set and
 *       writes a key of its own; exits 0.</li>
 *   <li>{@code loop}: writes keys {@code ack-<worker>-<n>} for n = 0, 1, ... and prints {@code ACK n} after each
 *       one is acknowledged, until killed.</li>
 * </ul>
 */
public final class ManifestWorkerMain {

    private ManifestWorkerMain() {
    }

    public static void main(String[] args) throws Exception {
        String uri = args[0];
        String mode = args[1];
        int worker = Integer.parseInt(args[2]);
        int iterations = Integer.parseInt(args[3]);
        ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(50).withCheckpointEvery(25).withGcGraceMs(2_000)
                .withBackoff(1, 50);
        try (ObjectStore objects = ObjectStores.open(uri);
             ManifestMetadataStore store = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
            if (mode.equals("count")) {
                for (int i = 0; i < iterations; i++) {
                    while (true) {
                        Optional<byte[]> current = store.getKv("counter").get(30, TimeUnit.SECONDS);
                        long value = current.map(b -> Long.parseLong(new String(b, StandardCharsets.UTF_8))).orElse(0L);
                        byte[] next = Long.toString(value + 1).getBytes(StandardCharsets.UTF_8);
                        if (store.compareAndSetKv("counter", current.orElse(null), next).get(30, TimeUnit.SECONDS)) {
                            break;
                        }
                    }
                    store.putKv("w" + worker + "-" + i, new byte[] {1}).get(30, TimeUnit.SECONDS);
                }
            } else {
                for (int n = 0; ; n++) {
                    store.putKv(String.format("ack-%d-%06d", worker, n), new byte[] {(byte) n}).get(30, TimeUnit.SECONDS);
                    System.out.println("ACK " + n);
                    System.out.flush();
                }
            }
        }
    }
}
