package io.s3stream.store.s3.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.internal.store.common.StoreUri;
import io.s3stream.internal.util.Futures;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.http.nio.netty.SdkEventLoopGroup;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.CreateMultipartUploadRequest;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Error;
import software.amazon.awssdk.services.s3.model.S3Object;
import software.amazon.awssdk.services.s3.model.ServerSideEncryption;

import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An {@link ObjectStore} on Amazon S3 or an S3-compatible server (MinIO, S3Proxy), through the AWS SDK v2 async
 * client over Netty.
 *
 * <pre>
 * s3://bucket/prefix?region=us-east-1
 * s3://bucket/prefix?endpoint=http://127.0.0.1:9000&amp;region=us-east-1&amp;pathStyle=true&amp;accessKey=…&amp;secretKey=…
 * </pre>
 * Settings: {@code endpoint} (default: AWS for the region), {@code region} (default {@code AWS_REGION} or
 * {@code us-east-1}), {@code pathStyle} (default {@code true} when an endpoint is given), {@code accessKey} and
 * {@code secretKey} (default: the SDK's default credentials chain), {@code connectTimeoutMs} (default 2000),
 * {@code maxConnections} (default 128), {@code minPartSizeBytes} (default 5 MiB), {@code sse} and {@code sseKmsKeyId}.
 *
 * <h2>Server-side encryption</h2>
 * {@code sse=AES256} (SSE-S3) or {@code sse=aws:kms} (SSE-KMS, with {@code sseKmsKeyId=<key id or ARN>} or the
 * bucket's default KMS key) is asked on every write: each PUT and each multipart upload, so the objects compaction
 * assembles from copied parts are encrypted as the WAL uploads are. {@link #open} writes and deletes one probe object
 * with those settings, so a key that does not exist or may not be used fails at start, not at the first upload.
 *
 * <h2>Failure</h2>
 * The SDK's own retries are off: retries, timeouts and budgets live once in core's ObjectStorage. Every error is mapped
 * here to an {@link ObjectStoreException} naming the bucket, the key and the HTTP status and error code, retriable for
 * throttling (503 SlowDown, 429), 500/502/504, {@code 409 ConditionalRequestConflict}, {@code RequestTimeout},
 * connection errors and timeouts; final for the rest (403, a missing bucket, 400). {@link #open} checks the bucket with
 * one cheap request so that a wrong credential, a missing bucket or an unreachable endpoint fails at start with a
 * precise message rather than at the first upload.
 *
 * <h2>Buffers</h2>
 * {@code put} copies the caller's bytes into a heap buffer that the request owns: a request abandoned by a timeout
 * may still be writing when the caller releases its buffer, and must never send recycled memory under a live key.
 */
public final class S3ObjectStore implements ObjectStore {
    static final Set<String> SETTINGS = Set.of("endpoint", "region", "pathStyle", "accessKey", "secretKey",
            "connectTimeoutMs", "maxConnections", "minPartSizeBytes", "sse", "sseKmsKeyId");
    /** The probe object {@link #open} writes and deletes when server-side encryption is asked. */
    static final String SSE_PROBE = ".s3stream-sse-check";
    private static final int DELETE_BATCH = 1000;
    private static final Duration OPEN_CHECK_TIMEOUT = Duration.ofSeconds(10);

    /**
     * One Netty event loop for every S3 store of the process, created on first use, never shut down (daemon
     * threads): a client that owns its group waits out a graceful shutdown of seconds on close.
     */
    private static final class SharedEventLoop {
        static final SdkEventLoopGroup GROUP = SdkEventLoopGroup.builder()
                .numberOfThreads(Math.max(2, Runtime.getRuntime().availableProcessors()))
                .threadFactory(r -> Thread.ofPlatform().daemon().name("s3stream-s3-netty").unstarted(r))
                .build();
    }

    private final S3AsyncClient client;
    private final String bucket;
    private final String prefix;
    private final String description;
    private final String endpoint;
    private final int minPartSizeBytes;
    /** SSE-S3 or SSE-KMS asked on every write, or null. */
    private final ServerSideEncryption sse;
    private final String sseKmsKeyId;
    private final AtomicBoolean closed = new AtomicBoolean();

    private S3ObjectStore(S3AsyncClient client, String bucket, String prefix, String endpoint, int minPartSizeBytes,
                          ServerSideEncryption sse, String sseKmsKeyId) {
        this.client = client;
        this.sse = sse;
        this.sseKmsKeyId = sseKmsKeyId;
        this.bucket = bucket;
        this.prefix = prefix;
        this.endpoint = endpoint;
        this.description = "s3://" + bucket + "/" + prefix + (endpoint == null ? "" : " at " + endpoint);
        this.minPartSizeBytes = minPartSizeBytes;
    }

    /** Opens the store a URI names and checks that the bucket answers; see the class comment for the settings. */
    public static S3ObjectStore open(URI uri) {
        StoreUri u = StoreUri.parse(uri, SETTINGS);
        String bucket = uri.getHost() != null ? uri.getHost() : uri.getAuthority();
        if (bucket == null || bucket.isEmpty()) {
            throw new ObjectStoreException(u.redacted() + ": no bucket; expected s3://bucket/prefix", false);
        }
        String endpoint = u.get("endpoint", null);
        String region = u.get("region", System.getenv().getOrDefault("AWS_REGION", "us-east-1"));
        boolean pathStyle = u.boolSetting("pathStyle", endpoint != null);
        int connectTimeoutMs = u.intSetting("connectTimeoutMs", 2000, 1);
        int maxConnections = u.intSetting("maxConnections", 128, 1);
        int minPart = u.intSetting("minPartSizeBytes", StoreSupport.DEFAULT_MIN_PART_SIZE_BYTES, 1);
        String accessKey = u.get("accessKey", null);
        String secretKey = u.get("secretKey", null);
        if ((accessKey == null) != (secretKey == null)) {
            throw new ObjectStoreException(u.redacted() + ": accessKey and secretKey go together; give both or "
                    + "neither (then the AWS default credentials chain is used)", false);
        }
        ServerSideEncryption sse = sse(u);
        String sseKmsKeyId = u.get("sseKmsKeyId", null);
        if (sseKmsKeyId != null && sse != ServerSideEncryption.AWS_KMS) {
            throw new ObjectStoreException(u.redacted() + ": sseKmsKeyId needs sse=aws:kms", false);
        }
        AwsCredentialsProvider credentials = accessKey != null
                ? StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey))
                : DefaultCredentialsProvider.builder().build();
        var builder = S3AsyncClient.builder()
                .region(Region.of(region))
                .credentialsProvider(credentials)
                .forcePathStyle(pathStyle)
                // Checksums only where S3 requires them: S3-compatible servers differ in trailer support, and the
                // object format carries its own CRC32C per block, checked on every read.
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .httpClientBuilder(NettyNioAsyncHttpClient.builder()
                        .eventLoopGroup(SharedEventLoop.GROUP)
                        .connectionTimeout(Duration.ofMillis(connectTimeoutMs))
                        .connectionAcquisitionTimeout(Duration.ofSeconds(60))
                        .maxConcurrency(maxConnections));
        if (endpoint != null) {
            try {
                builder.endpointOverride(URI.create(endpoint));
            } catch (IllegalArgumentException e) {
                throw new ObjectStoreException(u.redacted() + ": endpoint '" + endpoint + "' is not a URI", e, false);
            }
        }
        S3AsyncClient client;
        try {
            client = builder.build();
        } catch (RuntimeException e) {
            throw new ObjectStoreException(u.redacted() + ": cannot create the S3 client: " + e.getMessage(), e, false);
        }
        S3ObjectStore store = new S3ObjectStore(client, bucket, StoreUri.prefix(uri.getPath()), endpoint, minPart, sse,
                sseKmsKeyId);
        try {
            store.checkBucket();
            if (sse != null) {
                store.checkEncryption();
            }
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        return store;
    }

    private static ServerSideEncryption sse(StoreUri u) {
        String v = u.get("sse", null);
        if (v == null || v.isBlank()) {
            return null;
        }
        return switch (v.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "aes256", "sse-s3" -> ServerSideEncryption.AES256;
            case "aws:kms", "sse-kms" -> ServerSideEncryption.AWS_KMS;
            default -> throw new ObjectStoreException(u.redacted() + ": sse must be AES256 (SSE-S3) or aws:kms "
                    + "(SSE-KMS), was '" + v + "'", false);
        };
    }

    /** Asks the configured server-side encryption of a PUT. */
    private PutObjectRequest.Builder encrypt(PutObjectRequest.Builder r) {
        return sse == null ? r : r.serverSideEncryption(sse).ssekmsKeyId(sseKmsKeyId);
    }

    /** Asks the configured server-side encryption of a multipart upload (its parts, copied ones too, inherit it). */
    private CreateMultipartUploadRequest.Builder encrypt(CreateMultipartUploadRequest.Builder r) {
        return sse == null ? r : r.serverSideEncryption(sse).ssekmsKeyId(sseKmsKeyId);
    }

    /**
     * Writes and deletes one small object with the configured encryption, so that a KMS key that does not exist or
     * may not be used fails the start with a precise message.
     */
    private void checkEncryption() {
        try {
            put(SSE_PROBE, io.netty.buffer.Unpooled.wrappedBuffer(new byte[] {1}))
                    .get(OPEN_CHECK_TIMEOUT.toMillis() + 1000, TimeUnit.MILLISECONDS);
            delete(List.of(SSE_PROBE)).get(OPEN_CHECK_TIMEOUT.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ObjectStoreException(description + ": interrupted while checking server-side encryption", e,
                    false);
        } catch (ExecutionException | TimeoutException e) {
            Throwable cause = e instanceof ExecutionException ? Futures.unwrap(e.getCause()) : e;
            throw new ObjectStoreException(description + ": cannot write with server-side encryption sse="
                    + sse + (sseKmsKeyId == null ? "" : " sseKmsKeyId=" + sseKmsKeyId) + ": " + cause.getMessage(),
                    cause, false);
        }
    }

    /** One cheap request (a LIST of at most one key under the prefix) that proves endpoint, credentials and bucket. */
    private void checkBucket() {
        CompletableFuture<ListObjectsV2Response> check = client.listObjectsV2(r -> r.bucket(bucket).prefix(prefix)
                .maxKeys(1).overrideConfiguration(o -> o.apiCallTimeout(OPEN_CHECK_TIMEOUT)));
        try {
            check.get(OPEN_CHECK_TIMEOUT.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            check.cancel(true);
            throw new ObjectStoreException(description + ": the endpoint did not answer within "
                    + OPEN_CHECK_TIMEOUT.toSeconds() + " s", e, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ObjectStoreException(description + ": interrupted while checking the bucket", e, false);
        } catch (ExecutionException e) {
            ObjectStoreException mapped = map("checking bucket", null, e.getCause());
            String hint = hint(e.getCause());
            throw new ObjectStoreException(description + ": cannot use bucket '" + bucket + "': " + hint
                    + " (" + mapped.getMessage() + ")", e.getCause(), false);
        }
    }

    private String hint(Throwable t) {
        Throwable c = Futures.unwrap(t);
        if (c instanceof AwsServiceException se) {
            String code = se.awsErrorDetails() == null ? "" : se.awsErrorDetails().errorCode();
            return switch (se.statusCode()) {
                case 403 -> "access denied (" + code + "): check accessKey/secretKey or the credentials chain, and "
                        + "the bucket policy";
                case 404 -> "the bucket does not exist (" + code + ")";
                case 301 -> "the bucket is in another region than the configured one (" + code + ")";
                default -> "status " + se.statusCode() + " " + code;
            };
        }
        if (c instanceof SdkClientException) {
            return "cannot reach " + (endpoint == null ? "S3" : endpoint) + ": " + rootMessage(c);
        }
        return String.valueOf(c);
    }

    @Override
    public CompletableFuture<Void> put(String key, ByteBuf data) {
        AsyncRequestBody body = AsyncRequestBody.fromByteBufferUnsafe(ByteBuffer.wrap(StoreSupport.copyReadable(data)));
        return client.putObject(r -> encrypt(r.bucket(bucket).key(fullKey(key))), body)
                .handle((response, error) -> {
                    if (error != null) {
                        throw map("PUT", key, error);
                    }
                    return null;
                });
    }

    @Override
    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
        AsyncRequestBody body = AsyncRequestBody.fromByteBufferUnsafe(ByteBuffer.wrap(StoreSupport.copyReadable(data)));
        return client.putObject(r -> encrypt(r.bucket(bucket).key(fullKey(key)).ifNoneMatch("*")), body)
                .handle((response, error) -> {
                    if (error == null) {
                        return true;
                    }
                    if (Futures.unwrap(error) instanceof AwsServiceException se && se.statusCode() == 412) {
                        return false; // PreconditionFailed: the key exists
                    }
                    throw map("PUT If-None-Match", key, error);
                });
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        StoreSupport.checkRangeArguments(description, key, position, length);
        if (length == 0) {
            // HTTP has no empty byte range: check the start against the size instead.
            return head(key).thenApply(info -> {
                long size = info.orElseThrow(() -> notFound(key)).sizeBytes();
                StoreSupport.clipRange(description, key, size, position, 1);
                return Unpooled.EMPTY_BUFFER;
            });
        }
        String range = "bytes=" + position + "-" + (position + length - 1);
        SplitBody body = SplitBody.clipped(description + ": GET '" + key + "' " + range, position, length,
                PooledByteBufAllocator.DEFAULT);
        return client.getObject(r -> r.bucket(bucket).key(fullKey(key)).range(range), body)
                .handle((parts, error) -> {
                    if (error == null) {
                        return parts.getFirst();
                    }
                    throw ownOrMapped("GET " + range, key, error);
                });
    }

    /** One ranged GET whose body goes straight into a pooled direct buffer per range ({@link SplitBody}). */
    @Override
    public CompletableFuture<List<ByteBuf>> getSplit(String key, long position, int[] lengths) {
        int total;
        try {
            total = ObjectStore.splitLength(description, key, position, lengths);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        String range = "bytes=" + position + "-" + (position + total - 1);
        SplitBody body = new SplitBody(description + ": GET '" + key + "' " + range, position, lengths.clone());
        return client.getObject(r -> r.bucket(bucket).key(fullKey(key)).range(range), body)
                .handle((parts, error) -> {
                    if (error == null) {
                        return parts;
                    }
                    throw ownOrMapped("GET " + range, key, error);
                });
    }

    /** The body's own verdict ({@link SplitBody}) arrives wrapped in the SDK's client exception: keep it. */
    private RuntimeException ownOrMapped(String what, String key, Throwable error) {
        for (Throwable c = error; c != null && c.getCause() != c; c = c.getCause()) {
            if (c instanceof ObjectStoreException own) {
                return own;
            }
        }
        return map(what, key, error);
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key) {
        return client.getObject(r -> r.bucket(bucket).key(fullKey(key)), AsyncResponseTransformer.toBytes())
                .handle((bytes, error) -> {
                    if (error != null) {
                        throw map("GET", key, error);
                    }
                    byte[] body = bytes.asByteArrayUnsafe();
                    Long declared = bytes.response().contentLength();
                    if (declared != null && declared != body.length) {
                        throw new ObjectStoreException(description + ": GET '" + key + "' returned " + body.length
                                + " bytes, Content-Length said " + declared, true);
                    }
                    return Unpooled.wrappedBuffer(body);
                });
    }

    @Override
    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        return client.headObject(r -> r.bucket(bucket).key(fullKey(key))).handle((response, error) -> {
            if (error != null) {
                if (Futures.unwrap(error) instanceof AwsServiceException se && se.statusCode() == 404) {
                    return Optional.empty(); // HEAD has no body: a missing bucket was ruled out at open
                }
                throw map("HEAD", key, error);
            }
            long modified = response.lastModified() == null ? 0 : response.lastModified().toEpochMilli();
            return Optional.of(new ObjectInfo(key, response.contentLength(), modified));
        });
    }

    @Override
    public CompletableFuture<List<ObjectInfo>> list(String keyPrefix) {
        List<ObjectInfo> out = new ArrayList<>();
        return listPage(keyPrefix, null, out).thenApply(ignored -> {
            out.sort((a, b) -> StoreSupport.compareKeys(a.key(), b.key()));
            return out;
        });
    }

    private CompletableFuture<Void> listPage(String keyPrefix, String token, List<ObjectInfo> out) {
        return client.listObjectsV2(r -> r.bucket(bucket).prefix(fullKey(keyPrefix)).continuationToken(token))
                .handle((page, error) -> {
                    if (error != null) {
                        throw map("LIST", keyPrefix, error);
                    }
                    for (S3Object o : page.contents()) {
                        if (o.key().startsWith(prefix)) {
                            long modified = o.lastModified() == null ? 0 : o.lastModified().toEpochMilli();
                            out.add(new ObjectInfo(o.key().substring(prefix.length()), o.size(), modified));
                        }
                    }
                    return Boolean.TRUE.equals(page.isTruncated()) ? page.nextContinuationToken() : null;
                })
                .thenCompose(next -> next == null ? CompletableFuture.completedFuture(null)
                        : listPage(keyPrefix, next, out));
    }

    @Override
    public CompletableFuture<Void> delete(Collection<String> keys) {
        List<String> all = List.copyOf(keys);
        List<CompletableFuture<Void>> batches = new ArrayList<>();
        for (int from = 0; from < all.size(); from += DELETE_BATCH) {
            batches.add(deleteBatch(all.subList(from, Math.min(all.size(), from + DELETE_BATCH))));
        }
        return CompletableFuture.allOf(batches.toArray(CompletableFuture[]::new));
    }

    private CompletableFuture<Void> deleteBatch(List<String> keys) {
        List<ObjectIdentifier> ids = keys.stream().map(k -> ObjectIdentifier.builder().key(fullKey(k)).build()).toList();
        return client.deleteObjects(r -> r.bucket(bucket).delete(Delete.builder().objects(ids).quiet(true).build()))
                .handle((DeleteObjectsResponse response, Throwable error) -> {
                    if (error != null) {
                        throw map("DELETE", keys.size() + " keys from '" + keys.getFirst() + "'", error);
                    }
                    for (S3Error e : response.errors()) {
                        if (!"NoSuchKey".equals(e.code())) {
                            boolean retriable = "SlowDown".equals(e.code()) || "InternalError".equals(e.code());
                            throw new ObjectStoreException(description + ": DELETE '" + e.key() + "' failed: " + e.code()
                                    + " " + e.message() + " (" + response.errors().size() + " of " + keys.size()
                                    + " keys failed)", retriable);
                        }
                    }
                    return null;
                });
    }

    @Override
    public CompletableFuture<MultipartUpload> startMultipart(String key) {
        return client.createMultipartUpload(r -> encrypt(r.bucket(bucket).key(fullKey(key)))).handle((response, error) -> {
            if (error != null) {
                throw map("CreateMultipartUpload", key, error);
            }
            return new S3Upload(key, response.uploadId());
        });
    }

    @Override
    public int minPartSizeBytes() {
        return minPartSizeBytes;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            client.close();
        }
    }

    private String fullKey(String key) {
        return prefix + key;
    }

    private ObjectNotFoundException notFound(String key) {
        return new ObjectNotFoundException(description + ": no object '" + key + "' in bucket '" + bucket + "'");
    }

    /**
     * Whether the store refused for lack of space: a full drive (MinIO answers 507 {@code XMinioStorageFull} once the
     * drive passes its free-space threshold; 507 Insufficient Storage in general) or a bucket over its quota (MinIO's
     * {@code XMinioAdminBucketQuotaExceeded}, {@code QuotaExceeded} of other servers). Like a full local disk this goes
     * away when data is deleted (retention, compaction, a topic deletion), so the request is retriable: the small
     * manifest commit that records a deletion, the remedy, must get through once a few bytes are free.
     */
    static boolean isOutOfSpace(int status, String code) {
        return status == 507 || "XMinioStorageFull".equals(code) || "XMinioAdminBucketQuotaExceeded".equals(code)
                || "QuotaExceeded".equals(code);
    }

    /** Maps an SDK failure to the SPI's exception: retriable or final, naming bucket, key and status. */
    ObjectStoreException map(String operation, String key, Throwable error) {
        Throwable c = Futures.unwrap(error);
        if (c instanceof ObjectStoreException ose) {
            return ose;
        }
        String what = description + ": " + operation + (key == null ? "" : " '" + key + "'") + " in bucket '"
                + bucket + "' failed: ";
        if (c instanceof AwsServiceException se) {
            int status = se.statusCode();
            String code = se.awsErrorDetails() == null ? null : se.awsErrorDetails().errorCode();
            String text = what + status + (code == null ? "" : " " + code)
                    + (se.awsErrorDetails() == null || se.awsErrorDetails().errorMessage() == null ? ""
                    : " (" + se.awsErrorDetails().errorMessage() + ")");
            if (status == 404 && !"NoSuchBucket".equals(code) && !"NoSuchUpload".equals(code)) {
                return new ObjectNotFoundException(text);
            }
            boolean retriable = status == 429 || status == 500 || status == 502 || status == 503 || status == 504
                    || "ConditionalRequestConflict".equals(code) || "RequestTimeout".equals(code)
                    || "SlowDown".equals(code) || "InternalError".equals(code) || isOutOfSpace(status, code)
                    // The server did not take in the whole body the SDK sent (MinIO answers so on a drive with no byte
                    // left): the request itself was right, and sending it again can succeed.
                    || "IncompleteBody".equals(code);
            return new ObjectStoreException(text, c, retriable);
        }
        if (c instanceof SdkClientException || c instanceof java.io.IOException || c instanceof TimeoutException) {
            return new ObjectStoreException(what + "client error: " + rootMessage(c), c, true);
        }
        return new ObjectStoreException(what + c, c, false);
    }

    private static String rootMessage(Throwable t) {
        String message = t.getMessage();
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == t ? String.valueOf(message) : message + " (" + root + ")";
    }

    /** One multipart upload: part ETags are kept by number and listed in order at completion. */
    private final class S3Upload implements MultipartUpload {
        private final String key;
        private final String uploadId;
        private final Map<Integer, String> etags = new ConcurrentSkipListMap<>();

        S3Upload(String key, String uploadId) {
            this.key = key;
            this.uploadId = uploadId;
        }

        @Override
        public String key() {
            return key;
        }

        @Override
        public CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data) {
            StoreSupport.checkPartNumber(description, key, partNumber);
            AsyncRequestBody body = AsyncRequestBody.fromByteBufferUnsafe(
                    ByteBuffer.wrap(StoreSupport.copyReadable(data)));
            return client.uploadPart(r -> r.bucket(bucket).key(fullKey(key)).uploadId(uploadId)
                    .partNumber(partNumber), body).handle((response, error) -> {
                if (error != null) {
                    throw map("UploadPart " + partNumber, key, error);
                }
                etags.put(partNumber, response.eTag());
                return null;
            });
        }

        @Override
        public CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position, long length) {
            StoreSupport.checkPartNumber(description, key, partNumber);
            if (position < 0 || length <= 0) {
                return StoreSupport.failed(description + ": copy range [" + position + ", " + (position + length)
                        + ") of '" + sourceKey + "' is invalid");
            }
            String range = "bytes=" + position + "-" + (position + length - 1);
            return client.uploadPartCopy(r -> r.sourceBucket(bucket).sourceKey(fullKey(sourceKey))
                    .destinationBucket(bucket).destinationKey(fullKey(key)).uploadId(uploadId).partNumber(partNumber)
                    .copySourceRange(range)).handle((response, error) -> {
                if (error != null) {
                    ObjectStoreException e = map("UploadPartCopy " + partNumber + " from '" + sourceKey + "' " + range,
                            key, error);
                    if (Futures.unwrap(error) instanceof AwsServiceException se && se.statusCode() == 416) {
                        throw new ObjectStoreException(e.getMessage(), e, false);
                    }
                    throw e;
                }
                etags.put(partNumber, response.copyPartResult().eTag());
                return null;
            });
        }

        @Override
        public CompletableFuture<Void> complete() {
            List<CompletedPart> parts = new ArrayList<>();
            etags.forEach((n, etag) -> parts.add(CompletedPart.builder().partNumber(n).eTag(etag).build()));
            return client.completeMultipartUpload(r -> r.bucket(bucket).key(fullKey(key)).uploadId(uploadId)
                    .multipartUpload(m -> m.parts(parts))).handle((response, error) -> {
                if (error != null) {
                    throw map("CompleteMultipartUpload", key, error);
                }
                return null;
            });
        }

        @Override
        public CompletableFuture<Void> abort() {
            return client.abortMultipartUpload(r -> r.bucket(bucket).key(fullKey(key)).uploadId(uploadId))
                    .handle((response, error) -> {
                        if (error != null && !(Futures.unwrap(error) instanceof AwsServiceException se
                                && se.statusCode() == 404)) {
                            throw map("AbortMultipartUpload", key, error);
                        }
                        return null;
                    });
        }
    }
}
