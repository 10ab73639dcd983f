package io.s3stream.wal.object;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.wal.object.internal.WalObjectDump;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Offline dump of WAL objects ({@code bin/s3stream-tool dump-wal-object <file>...}): for each file (an object of a
 * {@code file://} store, or one downloaded from a bucket), the WAL header (kind, writer node and epoch, sequence,
 * records in append order), the stream ranges it holds, and whether every checksum holds. Exit status 1 when an object
 * is damaged.
 */
public final class WalObjectTool {
    private WalObjectTool() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 0) {
            System.err.println("usage: dump-wal-object <object-file>...");
            System.exit(2);
        }
        boolean ok = true;
        for (String arg : args) {
            Path file = Path.of(arg);
            ByteBuf object = Unpooled.wrappedBuffer(Files.readAllBytes(file));
            try {
                System.out.println(WalObjectDump.describe(object, file.getFileName().toString()));
            } catch (RuntimeException e) {
                ok = false;
                System.out.println(file + ": DAMAGED: " + e.getMessage());
            } finally {
                object.release();
            }
        }
        System.exit(ok ? 0 : 1);
    }
}
