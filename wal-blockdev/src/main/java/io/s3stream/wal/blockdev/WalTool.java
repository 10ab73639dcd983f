package io.s3stream.wal.blockdev;

import io.s3stream.wal.blockdev.internal.BlockIo;
import io.s3stream.wal.blockdev.internal.NativeBlockIo;
import io.s3stream.wal.blockdev.internal.RingScanner;
import io.s3stream.wal.blockdev.internal.WalDescriptor;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Locale;

/**
 * Offline inspection of a blockdev WAL: prints both header slots, then every record from the scan start (position,
 * size, session, checksum status) and what stopped the scan. Run it only while no process has the WAL open.
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp ... io.s3stream.wal.blockdev.WalTool /var/lib/app/wal.img [--limit N]</pre>
 *
 * <p>The records' payloads are opaque here; a {@link RecordFormatter} (the engine's decoder, for instance) can add
 * a description such as stream id and offsets to each line.
 */
public final class WalTool {
    private WalTool() {
    }

    /** Describes one record's payload for a line of output; the engine supplies one that knows its record format. */
    @FunctionalInterface
    public interface RecordFormatter {
        /** A short description of {@code payload} (read-only, valid during the call), or an empty string. */
        String describe(long walPosition, ByteBuffer payload);
    }

    /** Entry point: {@code WalTool <path> [--limit N]}. Exit status 0 if a valid header was found, 1 otherwise. */
    public static void main(String[] args) {
        if (args.length < 1 || args[0].startsWith("-")) {
            System.err.println("usage: WalTool <file-or-device> [--limit N] [--from POSITION]");
            System.exit(2);
            return;
        }
        long limit = Long.MAX_VALUE;
        long from = -1;
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--limit") && i + 1 < args.length) {
                limit = Long.parseLong(args[++i]);
            } else if (args[i].equals("--from") && i + 1 < args.length) {
                from = Long.parseLong(args[++i]);
            }
        }
        int status = print(args[0], System.out, (p, b) -> "", limit, from);
        System.exit(status);
    }

    /**
     * Prints the WAL at {@code path} to {@code out}.
     *
     * @return 0 if a valid header was found, 1 otherwise
     */
    public static int print(String path, PrintStream out, RecordFormatter formatter, long limit) {
        return print(path, out, formatter, limit, -1);
    }

    /**
     * Prints the WAL at {@code path}, scanning from logical position {@code from} (a record start) instead of the
     * header's scan start when {@code from >= 0}: useful to look at trimmed or orphaned records.
     *
     * @return 0 if a valid header was found, 1 otherwise
     */
    public static int print(String path, PrintStream out, RecordFormatter formatter, long limit, long from) {
        try (BlockIo io = NativeBlockIo.open(path, false); Arena arena = Arena.ofConfined()) {
            out.printf(Locale.ROOT, "%s: %s of %d bytes%n", path, io.isBlockDevice() ? "block device" : "file",
                    io.sizeBytes());
            MemorySegment block = arena.allocate(WalDescriptor.BLOCK_BYTES, WalDescriptor.BLOCK_BYTES);
            WalDescriptor.Header best = null;
            for (int slot = 0; slot < WalDescriptor.HEADER_SLOTS; slot++) {
                io.read((long) slot * WalDescriptor.BLOCK_BYTES, block);
                WalDescriptor.HeaderRead read = WalDescriptor.decodeHeader(block);
                if (read.valid()) {
                    WalDescriptor.Header h = read.header();
                    out.printf(Locale.ROOT, "header slot %d: sequence %d, capacity %d, trimPosition %d, scanStart %d, "
                                    + "node %d, nodeEpoch %d, walId %08x, session %d%n", slot, h.sequence(),
                            h.capacityBytes(), h.trimPosition(), h.scanStart(), h.nodeId(), h.nodeEpoch(), h.walId(),
                            h.session());
                    if (best == null || h.sequence() > best.sequence()) {
                        best = h;
                    }
                } else {
                    out.printf(Locale.ROOT, "header slot %d: invalid (%s)%n", slot, read.problem());
                }
            }
            if (best == null) {
                out.println("no valid header: not a blockdev WAL, or both header slots are damaged");
                return 1;
            }
            long ringBytes = best.capacityBytes() - WalDescriptor.RING_OFFSET;
            long trim = best.trimPosition();
            long[] shown = {0};
            long max = limit;
            try (RingScanner scanner = new RingScanner(io, ringBytes, best.walId(), Integer.MAX_VALUE - 64,
                    4 * 1024 * 1024)) {
                RingScanner.Result result = scanner.scan(from >= 0 ? from : best.scanStart(), new RingScanner.Visitor() {
                    @Override
                    public void record(long position, long nextPosition, int session, MemorySegment payload) {
                        if (shown[0]++ < max) {
                            String extra = formatter.describe(position, payload.asByteBuffer().asReadOnlyBuffer());
                            out.printf(Locale.ROOT, "record position %d next %d size %d session %d crc ok%s%s%n",
                                    position, nextPosition, payload.byteSize(), session,
                                    position < trim ? " (trimmed)" : "", extra.isEmpty() ? "" : " " + extra);
                        }
                    }

                    @Override
                    public void padding(long position, int lengthBytes, int session) {
                        if (shown[0] < max) {
                            out.printf(Locale.ROOT, "padding position %d size %d session %d%n", position, lengthBytes,
                                    session);
                        }
                    }
                });
                out.printf(Locale.ROOT, "%d records, %d payload bytes, end position %d; stopped: %s%s%n",
                        result.records(), result.payloadBytes(), result.endPosition(), result.detail(),
                        result.torn() ? " (CRC FAILED)" : "");
            }
            return 0;
        }
    }
}
