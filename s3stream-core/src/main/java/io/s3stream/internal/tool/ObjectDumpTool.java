package io.s3stream.internal.tool;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.CorruptDataException;
import io.s3stream.internal.format.DataBlock;
import io.s3stream.internal.format.DecodedBatch;
import io.s3stream.internal.format.IndexEntry;
import io.s3stream.internal.format.ObjectFooter;
import io.s3stream.internal.format.ObjectFormat;
import io.s3stream.internal.format.ObjectIndex;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * Offline CLI that prints an object's footer, index and (optionally) batches, checking every block's CRC.
 *
 * <p>Usage: {@code ObjectDumpTool <object-file> [--batches]}. Exit code 0 when everything verifies, 1 when
 * anything is corrupt (a damaged block is reported as BAD and the dump goes on with the next one), 2 on a usage
 * or IO error.
 */
public final class ObjectDumpTool {

    public static final int EXIT_OK = 0;
    public static final int EXIT_CORRUPT = 1;
    public static final int EXIT_USAGE = 2;

    private ObjectDumpTool() {
    }

    public static void main(String[] args) {
        int code = run(args, System.out, System.err);
        if (code != EXIT_OK) {
            System.exit(code);
        }
    }

    /** Parses {@code args}, dumps the file and returns the exit code. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        String file = null;
        boolean batches = false;
        for (String arg : args) {
            if (arg.equals("--batches")) {
                batches = true;
            } else if (file == null && !arg.startsWith("--")) {
                file = arg;
            } else {
                file = null;
                break;
            }
        }
        if (file == null) {
            err.println("usage: ObjectDumpTool <object-file> [--batches]");
            return EXIT_USAGE;
        }
        Path path = Path.of(file);
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size > Integer.MAX_VALUE) {
                err.println(path + ": " + size + " bytes, larger than any object this format allows");
                return EXIT_CORRUPT;
            }
            ByteBuf object = Unpooled.wrappedBuffer(channel.map(FileChannel.MapMode.READ_ONLY, 0, size));
            try {
                return dump(object, path.toString(), batches, out);
            } finally {
                object.release();
            }
        } catch (IOException e) {
            err.println(path + ": " + e);
            return EXIT_USAGE;
        }
    }

    /**
     * Writes a human-readable dump of the object between {@code object}'s reader and writer index to {@code out}.
     *
     * @return {@link #EXIT_OK} if every part verifies, else {@link #EXIT_CORRUPT}
     */
    public static int dump(ByteBuf object, String objectKey, boolean batches, PrintStream out) {
        int r = object.readerIndex();
        int size = object.readableBytes();
        out.println("object " + objectKey + ": " + size + " bytes");
        ObjectFooter footer;
        ObjectIndex index;
        try {
            ByteBuf footerBytes = size >= ObjectFormat.FOOTER_SIZE
                    ? object.slice(r + size - ObjectFormat.FOOTER_SIZE, ObjectFormat.FOOTER_SIZE)
                    : object.slice(r, size);
            footer = ObjectFooter.decode(footerBytes, size, objectKey);
            out.printf("footer: version=%d indexPosition=%d indexLength=%d indexCrc=0x%08x entries=%d%n",
                    footer.version(), footer.indexPosition(), footer.indexLength(), footer.indexCrc(),
                    footer.entryCount());
            index = ObjectIndex.decode(object.slice(r + (int) footer.indexPosition(), footer.indexLength()),
                    footer, objectKey);
        } catch (CorruptDataException e) {
            out.println("BAD " + e.getMessage());
            return EXIT_CORRUPT;
        }
        List<IndexEntry> entries = index.entries();
        int bad = 0;
        for (int i = 0; i < entries.size(); i++) {
            IndexEntry e = entries.get(i);
            out.printf("block %d: stream=%d offsets=[%d, %d) records=%d position=%d size=%d",
                    i, e.streamId(), e.startOffset(), e.endOffset(), e.recordCount(), e.position(), e.sizeBytes());
            List<DecodedBatch> decoded;
            try {
                decoded = DataBlock.decode(object.slice(r + (int) e.position(), e.sizeBytes()), e, objectKey);
            } catch (CorruptDataException ex) {
                bad++;
                out.println(" crc=BAD");
                out.println("  " + ex.getMessage());
                continue;
            }
            out.println(" crc=OK batches=" + decoded.size());
            if (batches) {
                for (DecodedBatch b : decoded) {
                    out.printf("  batch baseOffset=%d count=%d payloadBytes=%d%n",
                            b.baseOffset(), b.count(), b.payload().readableBytes());
                }
            }
        }
        out.println("summary: " + entries.size() + " blocks, " + bad + " bad");
        return bad == 0 ? EXIT_OK : EXIT_CORRUPT;
    }
}
