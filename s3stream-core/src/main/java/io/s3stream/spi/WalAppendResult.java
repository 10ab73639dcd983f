package io.s3stream.spi;

/**
 * Where a durable WAL record landed.
 *
 * @param walPosition  position of the record
 * @param nextPosition position just past it; {@code trim(nextPosition)} releases this record and all before it
 */
public record WalAppendResult(long walPosition, long nextPosition) {
}
