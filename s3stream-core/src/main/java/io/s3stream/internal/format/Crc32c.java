package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Computes CRC32C over regions of {@link ByteBuf}s in place, without copying direct memory to the heap.
 */
final class Crc32c {

    private static final int COPY_CHUNK = 4096;

    private Crc32c() {
    }

    /** CRC32C of {@code buf[index, index + length)} as stored in the format (low 32 bits). */
    static int of(ByteBuf buf, int index, int length) {
        CRC32C crc = new CRC32C();
        update(crc, buf, index, length);
        return (int) crc.getValue();
    }

    /** Feeds {@code buf[index, index + length)} to {@code crc}; leaves the buffer's indexes untouched. */
    static void update(CRC32C crc, ByteBuf buf, int index, int length) {
        if (length == 0) {
            return;
        }
        if (buf.hasArray()) {
            crc.update(buf.array(), buf.arrayOffset() + index, length);
            return;
        }
        int count = buf.nioBufferCount();
        if (count == 1) {
            crc.update(buf.nioBuffer(index, length));
        } else if (count > 1) {
            for (ByteBuffer part : buf.nioBuffers(index, length)) {
                crc.update(part);
            }
        } else {
            byte[] chunk = new byte[Math.min(length, COPY_CHUNK)];
            for (int done = 0; done < length; ) {
                int n = Math.min(chunk.length, length - done);
                buf.getBytes(index + done, chunk, 0, n);
                crc.update(chunk, 0, n);
                done += n;
            }
        }
    }
}
