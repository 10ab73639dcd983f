package io.s3stream;

/**
 * The outcome of a durable append.
 *
 * @param baseOffset the offset of the batch's first record; the batch covers {@code [baseOffset, baseOffset + count)}
 */
public record AppendResult(long baseOffset) {
}
