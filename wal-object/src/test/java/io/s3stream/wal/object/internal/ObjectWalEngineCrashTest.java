package io.s3stream.wal.object.internal;

import io.s3stream.testing.EngineCrashHarness;

import java.nio.file.Path;

/**
 * The engine-level SIGKILL crash test ({@link EngineCrashHarness}) on {@code objectwal://} in the engine's
 * {@code file://} store: every acknowledged batch is read back after each kill, and recovery commits the WAL objects as
 * they are.
 */
class ObjectWalEngineCrashTest extends EngineCrashHarness {
    @Override
    protected String walUri(Path dataDir) {
        return "objectwal://?batchMs=5&batchBytes=256KiB&maxInFlight=4&capacity=" + WAL_CAPACITY;
    }
}
