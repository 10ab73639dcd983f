package io.s3stream.internal.format;

/**
 * The part of one stream an object holds, as the manifest records it.
 *
 * @param streamId    the stream
 * @param startOffset first offset of the stream in the object
 * @param endOffset   end (exclusive) of the stream's range in the object
 * @param sizeBytes   bytes of the stream's data blocks, CRCs included (index and footer excluded)
 */
public record StreamSummary(long streamId, long startOffset, long endOffset, long sizeBytes) {
}
