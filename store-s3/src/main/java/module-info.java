/**
 * s3stream's object store on Amazon S3 and S3-compatible servers (MinIO, S3Proxy, Ceph RGW): {@code s3://bucket/prefix}
 * URIs, through the AWS SDK v2 async client over Netty. The store is reached through
 * {@link io.s3stream.spi.ObjectStoreProvider}; the module exports nothing.
 */
@SuppressWarnings("module") // "s3" ends in a digit; it is the name everyone knows the service by
module io.s3stream.store.s3 {
    requires io.s3stream.core;
    requires software.amazon.awssdk.services.s3;
    requires software.amazon.awssdk.core;
    requires software.amazon.awssdk.awscore;
    requires software.amazon.awssdk.auth;
    requires software.amazon.awssdk.regions;
    requires software.amazon.awssdk.http.nio.netty;
    requires software.amazon.awssdk.http;
    requires software.amazon.awssdk.utils;
    requires software.amazon.awssdk.identity.spi;
    requires org.reactivestreams; // the body of a GET as the SDK streams it (SplitBody)

    provides io.s3stream.spi.ObjectStoreProvider with io.s3stream.store.s3.internal.S3ObjectStoreProvider;
}
