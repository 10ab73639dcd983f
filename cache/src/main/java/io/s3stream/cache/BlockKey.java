package io.s3stream.cache;

/**
 * Identity of a cached data block: the object it comes from and its byte position inside that object.
 *
 * @param objectId object id
 * @param position byte position of the block in the object
 */
public record BlockKey(long objectId, long position) {
}
