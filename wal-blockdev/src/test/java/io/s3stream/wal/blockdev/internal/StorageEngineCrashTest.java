package io.s3stream.wal.blockdev.internal;

import io.s3stream.testing.EngineCrashHarness;

import java.nio.file.Path;

/** The engine-level SIGKILL crash test ({@link EngineCrashHarness}) on a {@code blockdev://} WAL file. */
class StorageEngineCrashTest extends EngineCrashHarness {
    @Override
    protected String walUri(Path dataDir) {
        return "blockdev://" + dataDir.resolve("wal.img").toAbsolutePath().toUri().getRawPath() + "?capacity="
                + WAL_CAPACITY;
    }
}
