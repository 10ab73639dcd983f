/** Memory-bounded caches over reference-counted off-heap buffers; knows nothing of streams. */
module io.s3stream.cache {
    requires transitive io.netty.buffer;
    requires com.github.benmanes.caffeine;

    exports io.s3stream.cache;
}
