package io.s3stream.internal.format;

import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import static io.s3stream.internal.format.ObjectFormat.FOOTER_SIZE;

/**
 * Reads a whole object held in one buffer, for tools and tests; the engine reads footer, index and blocks with
 * separate ranged GETs instead.
 *
 * <p>Does not own the buffer: every batch it returns is an unretained slice of it.
 */
public final class ObjectReader {

    private final ByteBuf object;
    private final String objectKey;
    private final ObjectFooter footer;
    private final ObjectIndex index;

    private ObjectReader(ByteBuf object, String objectKey, ObjectFooter footer, ObjectIndex index) {
        this.object = object;
        this.objectKey = objectKey;
        this.footer = footer;
        this.index = index;
    }

    /**
     * Decodes footer and index of the object between {@code wholeObject}'s reader and writer index.
     *
     * @throws io.s3stream.CorruptDataException if footer or index are damaged
     */
    public static ObjectReader of(ByteBuf wholeObject, String key) {
        Objects.requireNonNull(wholeObject, "wholeObject");
        int r = wholeObject.readerIndex();
        int size = wholeObject.readableBytes();
        if (size < FOOTER_SIZE) {
            // Let the footer decoder produce the message.
            ObjectFooter.decode(wholeObject.slice(r, size), size, key);
        }
        ObjectFooter footer = ObjectFooter.decode(wholeObject.slice(r + size - FOOTER_SIZE, FOOTER_SIZE), size, key);
        ObjectIndex index = ObjectIndex.decode(
                wholeObject.slice(r + (int) footer.indexPosition(), footer.indexLength()), footer, key);
        return new ObjectReader(wholeObject, key, footer, index);
    }

    public ObjectFooter footer() {
        return footer;
    }

    public ObjectIndex index() {
        return index;
    }

    /** The bytes of the block {@code entry} describes, an unretained slice of the object. */
    public ByteBuf blockBytes(IndexEntry entry) {
        return object.slice(object.readerIndex() + (int) entry.position(), entry.sizeBytes());
    }

    /** Decodes and verifies the block {@code entry} describes. */
    public List<DecodedBatch> readBlock(IndexEntry entry) {
        return DataBlock.decode(blockBytes(entry), entry, objectKey);
    }

    /**
     * The batches of a stream that overlap {@code [startOffset, endOffset)}, whole, in offset order.
     *
     * @throws io.s3stream.CorruptDataException if a block they are in is damaged
     */
    public List<DecodedBatch> read(long streamId, long startOffset, long endOffset) {
        List<DecodedBatch> out = new ArrayList<>();
        for (IndexEntry e : index.find(streamId, startOffset, endOffset, Long.MAX_VALUE)) {
            for (DecodedBatch b : readBlock(e)) {
                if (b.baseOffset() < endOffset && startOffset < b.endOffset()) {
                    out.add(b);
                }
            }
        }
        return out;
    }
}
