package io.s3stream.wal.blockdev.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.s3stream.spi.WalAppendResult;
import io.s3stream.spi.WalContext;
import io.s3stream.spi.WriteAheadLog;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Helpers shared by the fault, corruption and crash tests. */
final class TestWals {
    private TestWals() {
    }

    record Recovered(long position, long nextPosition, byte[] data) {
    }

    static BlockDeviceWalConfig config(Path file, long capacity, int inflight) {
        return BlockDeviceWalConfig.parse(URI.create("blockdev://" + file.toAbsolutePath().toUri().getRawPath()
                + "?capacity=" + capacity + "&inflight=" + inflight));
    }

    static WalContext context(long epoch) {
        return new WalContext(1, epoch, Path.of("target"), Duration.ofSeconds(2));
    }

    /** Creates the file if needed and opens the WAL through {@code wrap} around the real IO. */
    static BlockDeviceWal open(BlockDeviceWalConfig config, long epoch, java.util.function.Function<BlockIo, BlockIo> wrap) {
        WalTarget.Opened target = WalTarget.open(config);
        return BlockDeviceWal.open(wrap.apply(target.io()), target.capacityBytes(), config, context(epoch));
    }

    static BlockDeviceWal open(BlockDeviceWalConfig config, long epoch) {
        return BlockDeviceWal.open(config, context(epoch));
    }

    static List<Recovered> recover(WriteAheadLog wal) {
        List<Recovered> out = new ArrayList<>();
        wal.recover((p, n, buf) -> {
            try {
                byte[] b = new byte[buf.readableBytes()];
                buf.getBytes(buf.readerIndex(), b);
                out.add(new Recovered(p, n, b));
            } finally {
                buf.release();
            }
        });
        return out;
    }

    static ByteBuf buffer(byte[] data) {
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(data.length);
        buf.writeBytes(data);
        return buf;
    }

    static WalAppendResult appendSync(WriteAheadLog wal, byte[] data) throws Exception {
        ByteBuf buf = buffer(data);
        try {
            return wal.append(buf).get(30, TimeUnit.SECONDS);
        } finally {
            buf.release();
        }
    }
}
