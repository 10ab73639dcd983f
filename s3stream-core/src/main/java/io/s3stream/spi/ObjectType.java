package io.s3stream.spi;

/** What an object holds. */
public enum ObjectType {
    /** Stream set object: data of many streams, from one upload of one node. */
    STREAM_SET,
    /** Stream object: one contiguous range of one stream. */
    STREAM
}
