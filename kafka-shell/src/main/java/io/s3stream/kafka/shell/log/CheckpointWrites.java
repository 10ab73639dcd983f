package io.s3stream.kafka.shell.log;

import io.s3stream.KeyValues;

import java.util.concurrent.CompletableFuture;
import java.util.function.LongConsumer;
import java.util.function.Supplier;

/**
 * The writes of one key's checkpoints (a partition's time index, its transaction state): one at a time, in the order
 * they are asked for, each once the one before it finished; a checkpoint that covers no more than one already asked
 * for (or found stored) is dropped, so an older checkpoint never overwrites a newer one. Every checkpoint is whole, so
 * a failed write is only logged (at DEBUG, with what it costs): the next one repairs it. Thread-safe.
 */
final class CheckpointWrites {
    private static final System.Logger LOG = System.getLogger(CheckpointWrites.class.getName());

    private final KeyValues kv;
    private final String key;
    private final Supplier<String> whenLost;
    private long asked = -1; // guarded by this: the end of the newest checkpoint asked for or found
    private CompletableFuture<Void> last = CompletableFuture.completedFuture(null); // guarded by this

    /** @param whenLost what a checkpoint that could not be written costs, for the log */
    CheckpointWrites(KeyValues kv, String key, Supplier<String> whenLost) {
        this.kv = kv;
        this.key = key;
        this.whenLost = whenLost;
    }

    /** A checkpoint covering offsets below {@code end} is stored already (read at an open). */
    synchronized void found(long end) {
        asked = Math.max(asked, end);
    }

    /**
     * Writes {@code checkpoint}, which covers offsets below {@code end}, after the writes asked for before it, and runs
     * {@code onStored} with {@code end} once it is stored. Returns that write (failed if it failed), or the last one
     * asked for when this one is dropped.
     */
    synchronized CompletableFuture<Void> write(long end, byte[] checkpoint, LongConsumer onStored) {
        if (end <= asked) {
            return last;
        }
        asked = end;
        last = last.exceptionally(e -> null).thenCompose(v -> kv.put(key, checkpoint)).whenComplete((v, e) -> {
            if (e != null) {
                LOG.log(System.Logger.Level.DEBUG, () -> whenLost.get(), e);
            } else {
                onStored.accept(end);
            }
        });
        return last;
    }
}
