package io.s3stream.internal.engine;

import io.s3stream.InvalidConfigException;
import io.s3stream.StorageConfig;

/**
 * The engine's memory budgets: the ones {@link StorageConfig} sets, the others derived from the JVM's direct-memory
 * limit ({@link MemoryLimits}), checked against each other and against the limit before anything is allocated.
 *
 * @param logCacheBytes           the log cache's budget
 * @param blockCacheBytes         the block cache's budget, read-ahead area included
 * @param readAheadBytes          the read-ahead area (0: read-ahead off)
 * @param readAheadMaxWindowBytes the largest window of one sequential reader
 */
record MemoryBudgets(long logCacheBytes, long blockCacheBytes, long readAheadBytes, int readAheadMaxWindowBytes) {
    private static final long MIB = 1024L * 1024;

    /**
     * Derives what {@code config} leaves unset: the log cache gets a quarter of {@code directLimitBytes} (64 MiB to
     * 1 GiB), the block cache an eighth (32 to 512 MiB), half of which is the read-ahead area.
     *
     * @throws InvalidConfigException naming the setting when a derived budget breaks a rule, or when the budgets do not
     *                                fit the direct-memory limit
     */
    static MemoryBudgets resolve(StorageConfig config, long directLimitBytes) {
        long logCache = config.logCacheBytes().orElse(MemoryLimits.share(directLimitBytes, 0.25, 64 * MIB, 1024 * MIB));
        long blockCache = config.blockCacheBytes()
                .orElse(MemoryLimits.share(directLimitBytes, 0.125, 32 * MIB, 512 * MIB));
        long readAhead = config.readAheadBytes().orElse(blockCache / 2);
        int window = config.readAheadMaxWindowBytes().orElse((int) Math.min(32 * MIB, readAhead / 4));
        String derived = " (derived from the direct-memory limit of " + directLimitBytes
                + " bytes unless set; set StorageConfig.logCacheBytes/blockCacheBytes/readAheadBytes explicitly or "
                + "change -XX:MaxDirectMemorySize)";
        if (readAhead > blockCache / 2) {
            throw new InvalidConfigException("StorageConfig.readAheadBytes must be >= 0 and <= blockCacheBytes / 2 ("
                    + blockCache / 2 + "), was " + readAhead + derived);
        }
        if (window > readAhead) {
            throw new InvalidConfigException("StorageConfig.readAheadMaxWindowBytes must be >= 0 and <= readAheadBytes ("
                    + readAhead + "), was " + window + derived);
        }
        if (config.uploadThresholdBytes() > logCache / 2) {
            throw new InvalidConfigException("StorageConfig.uploadThresholdBytes must be >= 64 KiB and <= "
                    + "logCacheBytes / 2 (" + logCache / 2 + "), was " + config.uploadThresholdBytes() + derived);
        }
        long total = logCache + blockCache;
        if (total > directLimitBytes) {
            throw new InvalidConfigException("StorageConfig.logCacheBytes (" + logCache + ") + blockCacheBytes ("
                    + blockCache + ") = " + total + " bytes exceed the JVM's direct-memory limit of " + directLimitBytes
                    + " bytes (-XX:MaxDirectMemorySize, or the maximum heap when unset): lower the cache budgets "
                    + "or raise -XX:MaxDirectMemorySize");
        }
        return new MemoryBudgets(logCache, blockCache, readAhead, window);
    }
}
