package io.s3stream.internal.metadata;

import io.s3stream.spi.StreamRange;

/** A live range of a stream and the committed object holding it. */
record IndexedRange(long objectId, StreamRange range) {
}
