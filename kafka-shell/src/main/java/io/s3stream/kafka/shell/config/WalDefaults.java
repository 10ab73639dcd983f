package io.s3stream.kafka.shell.config;

import io.s3stream.spi.WriteAheadLogProvider;

import java.nio.file.Path;
import java.util.ServiceLoader;

/** Whether a WAL module that offers a default (such as wal-blockdev's preallocated file) is on the class path. */
final class WalDefaults {
    private WalDefaults() {
    }

    static boolean anyDefault(Path dataDir) {
        for (WriteAheadLogProvider p : ServiceLoader.load(WriteAheadLogProvider.class)) {
            if (p.defaultUri(dataDir).isPresent()) {
                return true;
            }
        }
        return false;
    }
}
