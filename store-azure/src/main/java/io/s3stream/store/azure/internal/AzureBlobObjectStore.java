package io.s3stream.store.azure.internal;

import com.azure.core.http.rest.PagedResponse;
import com.azure.core.http.rest.Response;
import com.azure.core.util.BinaryData;
import com.azure.core.util.Context;
import com.azure.core.util.HttpClientOptions;
import com.azure.identity.DefaultAzureCredentialBuilder;
import com.azure.storage.blob.BlobClient;
import com.azure.storage.blob.BlobContainerClient;
import com.azure.storage.blob.BlobServiceClientBuilder;
import com.azure.storage.blob.models.BlobDownloadResponse;
import com.azure.storage.blob.models.BlobErrorCode;
import com.azure.storage.blob.models.BlobItem;
import com.azure.storage.blob.models.BlobProperties;
import com.azure.storage.blob.models.BlobRange;
import com.azure.storage.blob.models.BlobRequestConditions;
import com.azure.storage.blob.models.BlobStorageException;
import com.azure.storage.blob.models.BlockBlobItem;
import com.azure.storage.blob.models.ListBlobsOptions;
import com.azure.storage.blob.options.BlockBlobSimpleUploadOptions;
import com.azure.storage.blob.specialized.BlockBlobClient;
import com.azure.storage.common.StorageSharedKeyCredential;
import com.azure.storage.common.policy.RequestRetryOptions;
import com.azure.storage.common.policy.RetryPolicyType;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.s3stream.internal.store.common.SplitBuffers;
import io.s3stream.internal.store.common.StoreSupport;
import io.s3stream.internal.store.common.StoreUri;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An {@link ObjectStore} on Azure Blob Storage (or Azurite) through the Azure Storage Blob SDK, which only this module
 * brings to an application.
 *
 * <pre>
 * azblob://account/container/prefix?key=…                       (endpoint https://account.blob.core.windows.net)
 * azblob://devstoreaccount1/container/prefix?endpoint=http://127.0.0.1:10000/devstoreaccount1&amp;key=…
 * azblob://account/container/prefix?connectionString=…         (or AZURE_STORAGE_CONNECTION_STRING)
 * azblob://account/container/prefix                            (Entra ID: DefaultAzureCredential)
 * </pre>
 * Settings: {@code endpoint}, {@code key} (the account's shared key), {@code connectionString},
 * {@code managedIdentityClientId} (a user-assigned managed identity for the Entra ID chain),
 * {@code connectTimeoutMs} (default 2000), {@code minPartSizeBytes} (default 5 MiB, for parity with S3),
 * {@code encryptionScope} (an encryption scope of the account: every Put Blob, Put Block and Put Block List asks it,
 * so every object, those compaction assembles included, is encrypted with its key).
 *
 * <h2>Mapping of the operations</h2>
 * <ul>
 *   <li>Blocking SDK calls run on virtual threads; the SDK's own retries are off (one try), core's ObjectStorage
 *       retries.</li>
 *   <li>{@code putIfAbsent}: Put Blob with {@code If-None-Match: *}; 409 BlobAlreadyExists or 412 mean "exists".</li>
 *   <li>Multipart: staged blocks (Put Block) committed by Put Block List in part order. Block ids carry a random
 *       per-upload token so that two uploads to one key do not mix. {@code abort} has nothing to delete: Azure drops
 *       uncommitted blocks by itself after a week, and they are never visible.</li>
 *   <li>{@code uploadPartCopy} reads the range and stages it as a block: Put Block From URL would copy server-side but
 *       Azurite does not implement it, and a store that works only against Azure cannot be tested here.</li>
 *   <li>{@code delete}: one Delete Blob per key, concurrently (Blob Batch is a separate artifact; not worth it for
 *       compaction's delete rate).</li>
 * </ul>
 * Errors: 503 ServerBusy, 500, 429, timeouts, connection errors and a failure to get an Entra ID token are retriable;
 * 403, a missing container and 400 are final, with a message naming the account, container, key and status.
 */
public final class AzureBlobObjectStore implements ObjectStore {
    static final Set<String> SETTINGS = Set.of("endpoint", "key", "connectionString", "connectTimeoutMs",
            "minPartSizeBytes", "encryptionScope", "managedIdentityClientId");
    private static final Duration OPEN_CHECK_TIMEOUT = Duration.ofSeconds(10);

    private final BlobContainerClient container;
    private final String prefix;
    private final String description;
    private final int minPartSizeBytes;
    private final ExecutorService executor = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("s3stream-azblob-", 0).factory());
    private final AtomicBoolean closed = new AtomicBoolean();

    private AzureBlobObjectStore(BlobContainerClient container, String prefix, String description, int minPartSizeBytes) {
        this.container = container;
        this.prefix = prefix;
        this.description = description;
        this.minPartSizeBytes = minPartSizeBytes;
    }

    /** Opens the store and checks that the container answers. */
    static AzureBlobObjectStore open(URI uri) {
        StoreUri u = StoreUri.parse(uri, SETTINGS);
        String account = uri.getHost() != null ? uri.getHost() : uri.getAuthority();
        String path = uri.getPath() == null ? "" : uri.getPath();
        while (path.startsWith("/")) {
            path = path.substring(1);
        }
        int slash = path.indexOf('/');
        String containerName = slash < 0 ? path : path.substring(0, slash);
        String prefix = StoreUri.prefix(slash < 0 ? "" : path.substring(slash + 1));
        if (account == null || account.isEmpty() || containerName.isEmpty()) {
            throw new ObjectStoreException(u.redacted() + ": expected azblob://account/container/prefix", false);
        }
        int connectTimeoutMs = u.intSetting("connectTimeoutMs", 2000, 1);
        int minPart = u.intSetting("minPartSizeBytes", StoreSupport.DEFAULT_MIN_PART_SIZE_BYTES, 1);
        String connectionString = u.get("connectionString", System.getenv("AZURE_STORAGE_CONNECTION_STRING"));
        String endpoint = u.get("endpoint", "https://" + account + ".blob.core.windows.net");
        String key = u.get("key", null);
        BlobServiceClientBuilder builder = new BlobServiceClientBuilder()
                .clientOptions(new HttpClientOptions().setConnectTimeout(Duration.ofMillis(connectTimeoutMs)))
                .retryOptions(new RequestRetryOptions(RetryPolicyType.FIXED, 1, (Integer) null, null, null, null));
        String encryptionScope = u.get("encryptionScope", null);
        if (encryptionScope != null) {
            builder.encryptionScope(encryptionScope);
        }
        if (key != null) {
            builder.endpoint(endpoint).credential(new StorageSharedKeyCredential(account, key));
        } else if (connectionString != null) {
            builder.connectionString(connectionString);
        } else {
            // Entra ID through DefaultAzureCredential's chain: a service principal or workload identity from the
            // environment (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE), a
            // managed identity, then the developer tools' logins. Tokens are fetched when the first request needs one.
            DefaultAzureCredentialBuilder entra = new DefaultAzureCredentialBuilder();
            String clientId = u.get("managedIdentityClientId", null);
            if (clientId != null) {
                entra.managedIdentityClientId(clientId);
            }
            builder.endpoint(endpoint).credential(entra.build());
        }
        String description = "azblob://" + account + "/" + containerName + "/" + prefix
                + (u.settings().containsKey("endpoint") ? " at " + endpoint : "");
        BlobContainerClient container;
        try {
            container = builder.buildClient().getBlobContainerClient(containerName);
        } catch (RuntimeException e) {
            throw new ObjectStoreException(description + ": cannot create the Azure client: " + e.getMessage(), e, false);
        }
        AzureBlobObjectStore store = new AzureBlobObjectStore(container, prefix, description, minPart);
        try {
            store.checkContainer(account, containerName, key == null && connectionString == null);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        return store;
    }

    /** Whether {@code t} or a cause of it is an Entra ID failure to get a token (not a storage service's answer). */
    private static boolean isAuthenticationFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof com.azure.core.exception.ClientAuthenticationException
                    || c instanceof com.azure.identity.CredentialUnavailableException) {
                return true;
            }
        }
        return false;
    }

    private void checkContainer(String account, String containerName, boolean entraId) {
        CompletableFuture<Boolean> exists = call("checking container", null, container::exists);
        boolean found;
        try {
            found = exists.get(OPEN_CHECK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            exists.cancel(true);
            throw new ObjectStoreException(description + ": the endpoint did not answer within "
                    + OPEN_CHECK_TIMEOUT.toSeconds() + " s", e, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ObjectStoreException(description + ": interrupted while checking the container", e, false);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            String hint = c.getCause() instanceof BlobStorageException bse && bse.getStatusCode() == 403
                    ? (entraId ? "access denied: check that the Entra ID token is for this account's storage "
                    + "and that the identity holds a data role on the container (Storage Blob Data Contributor)"
                    : "access denied: check the account key or connection string")
                    : c.getCause() instanceof BlobStorageException ? "the service refused the request"
                    : entraId && isAuthenticationFailure(c) ? "no Entra ID token: DefaultAzureCredential found no "
                    + "usable identity (set key= or connectionString= in the URI, or configure an identity)"
                    : "cannot reach the endpoint";
            throw new ObjectStoreException(description + ": cannot use container '" + containerName
                    + "' of account '" + account + "': " + hint + " (" + c.getMessage() + ")", c, false);
        }
        if (!found) {
            throw new ObjectStoreException(description + ": container '" + containerName + "' does not exist in "
                    + "account '" + account + "'", false);
        }
    }

    @Override
    public CompletableFuture<Void> put(String key, ByteBuf data) {
        byte[] bytes = StoreSupport.copyReadable(data);
        return call("Put Blob", key, () -> {
            block(key).uploadWithResponse(new BlockBlobSimpleUploadOptions(BinaryData.fromBytes(bytes)), null,
                    Context.NONE);
            return null;
        });
    }

    @Override
    public CompletableFuture<Boolean> putIfAbsent(String key, ByteBuf data) {
        byte[] bytes = StoreSupport.copyReadable(data);
        return call("Put Blob If-None-Match", key, () -> {
            try {
                Response<BlockBlobItem> ignored = block(key).uploadWithResponse(
                        new BlockBlobSimpleUploadOptions(BinaryData.fromBytes(bytes))
                                .setRequestConditions(new BlobRequestConditions().setIfNoneMatch("*")),
                        null, Context.NONE);
                return true;
            } catch (BlobStorageException e) {
                if (e.getStatusCode() == 409 && BlobErrorCode.BLOB_ALREADY_EXISTS.equals(e.getErrorCode())
                        || e.getStatusCode() == 412) {
                    return false;
                }
                throw e;
            }
        });
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key, long position, int length) {
        StoreSupport.checkRangeArguments(description, key, position, length);
        return call("Get Blob [" + position + ", +" + length + ")", key, () -> {
            if (length == 0) {
                long size = blob(key).getProperties().getBlobSize();
                StoreSupport.clipRange(description, key, size, position, 1);
                return Unpooled.EMPTY_BUFFER;
            }
            RangeOutput out = new RangeOutput(length);
            try {
                BlobDownloadResponse response = blob(key).downloadStreamWithResponse(out,
                        new BlobRange(position, (long) length), null, null, false, null, Context.NONE);
                int received = out.received();
                if (received == 0) {
                    // Azurite answers a range at or past the end with an empty 200 instead of 416: check the size.
                    long size = blob(key).getProperties().getBlobSize();
                    StoreSupport.clipRange(description, key, size, position, length);
                }
                long expected = length;
                long size = StoreSupport.sizeFromContentRange(response.getDeserializedHeaders().getContentRange());
                if (size >= 0) {
                    expected = Math.min(length, size - position);
                }
                if (received != expected) {
                    throw new ObjectStoreException(description + ": GET '" + key + "' [" + position + ", "
                            + (position + length) + ") returned " + received + " bytes, expected " + expected, true);
                }
                return out.take();
            } catch (Throwable t) {
                out.release();
                throw t;
            }
        });
    }

    /** One Get Blob whose body is written straight into a pooled direct buffer per range. */
    @Override
    public CompletableFuture<List<ByteBuf>> getSplit(String key, long position, int[] lengths) {
        int total;
        try {
            total = ObjectStore.splitLength(description, key, position, lengths);
        } catch (ObjectStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
        int[] ranges = lengths.clone();
        return call("Get Blob [" + position + ", +" + total + ")", key, () -> {
            SplitOutput out = new SplitOutput(ranges);
            try {
                BlobDownloadResponse response = blob(key).downloadStreamWithResponse(out,
                        new BlobRange(position, (long) total), null, null, false, null, Context.NONE);
                if (out.buffers.received() != total) {
                    // Azurite answers a range at or past the end with an empty 200 instead of 416: ask the size.
                    long size = StoreSupport.sizeFromContentRange(response.getDeserializedHeaders().getContentRange());
                    if (size < 0) {
                        size = blob(key).getProperties().getBlobSize();
                    }
                    boolean endsEarly = size < position + total;
                    throw new ObjectStoreException(description + ": GET '" + key + "' [" + position + ", "
                            + (position + total) + ") returned " + out.buffers.received() + " bytes"
                            + (endsEarly ? "; the object ends at " + size : ", the object has " + size), !endsEarly);
                }
                return out.buffers.take();
            } catch (Throwable t) {
                out.buffers.release();
                throw t;
            }
        });
    }

    /** A download stream into one pooled direct buffer per range; bytes past the last range are an error, never data. */
    private static final class SplitOutput extends OutputStream {
        final SplitBuffers buffers;

        SplitOutput(int[] lengths) {
            buffers = new SplitBuffers(lengths, PooledByteBufAllocator.DEFAULT);
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (!buffers.write(b, off, len)) {
                // Closed: the waiting thread gave up (interrupted by close) and released, while the SDK still writes.
                throw new IOException(buffers.isClosed() ? "the read was abandoned"
                        : "the body went on past the " + buffers.total() + " bytes asked for");
            }
        }
    }

    /**
     * A download stream into one pooled direct buffer that grows with the body up to the range's length (a range may
     * run past the object's end, so the body's length is known only once it ends); bytes past the range are an error,
     * never data. Not a growing heap array: catch-up reads single blocks through here, and heap arrays of 512 KiB and
     * more are humongous objects to G1, kept on the heap by the block cache.
     */
    private static final class RangeOutput extends OutputStream {
        private final int length;
        private ByteBuf buffer; // guarded by this; null once taken or released

        RangeOutput(int length) {
            this.length = length;
            this.buffer = PooledByteBufAllocator.DEFAULT.directBuffer(Math.min(length, 1 << 20), length);
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) throws IOException {
            if (buffer == null) {
                // The waiting thread gave up (interrupted by close) and released, while the SDK still writes.
                throw new IOException("the read was abandoned");
            }
            if (len > buffer.maxWritableBytes()) {
                throw new IOException("the body went on past the " + length + " bytes asked for");
            }
            buffer.writeBytes(b, off, len);
        }

        synchronized int received() {
            return buffer == null ? 0 : buffer.readableBytes();
        }

        synchronized ByteBuf take() {
            ByteBuf taken = buffer;
            buffer = null;
            return taken;
        }

        synchronized void release() {
            if (buffer != null) {
                buffer.release();
                buffer = null;
            }
        }
    }

    @Override
    public CompletableFuture<ByteBuf> get(String key) {
        return call("Get Blob", key, () -> Unpooled.wrappedBuffer(blob(key).downloadContent().toBytes()));
    }

    @Override
    public CompletableFuture<Optional<ObjectInfo>> head(String key) {
        return call("Get Blob Properties", key, () -> {
            try {
                BlobProperties p = blob(key).getProperties();
                long modified = p.getLastModified() == null ? 0 : p.getLastModified().toInstant().toEpochMilli();
                return Optional.of(new ObjectInfo(key, p.getBlobSize(), modified));
            } catch (BlobStorageException e) {
                if (e.getStatusCode() == 404) {
                    return Optional.empty();
                }
                throw e;
            }
        });
    }

    @Override
    public CompletableFuture<List<ObjectInfo>> list(String keyPrefix) {
        return call("List Blobs", keyPrefix, () -> {
            List<ObjectInfo> out = new ArrayList<>();
            for (PagedResponse<BlobItem> page : container.listBlobs(
                    new ListBlobsOptions().setPrefix(prefix + keyPrefix), null).iterableByPage()) {
                for (BlobItem item : page.getValue()) {
                    if (item.getName().startsWith(prefix)) {
                        long modified = item.getProperties().getLastModified() == null ? 0
                                : item.getProperties().getLastModified().toInstant().toEpochMilli();
                        out.add(new ObjectInfo(item.getName().substring(prefix.length()),
                                item.getProperties().getContentLength(), modified));
                    }
                }
            }
            out.sort((a, b) -> StoreSupport.compareKeys(a.key(), b.key()));
            return out;
        });
    }

    @Override
    public CompletableFuture<Void> delete(Collection<String> keys) {
        List<CompletableFuture<Boolean>> deletes = new ArrayList<>();
        for (String key : keys) {
            deletes.add(call("Delete Blob", key, () -> blob(key).deleteIfExists()));
        }
        return CompletableFuture.allOf(deletes.toArray(CompletableFuture[]::new));
    }

    @Override
    public CompletableFuture<MultipartUpload> startMultipart(String key) {
        return CompletableFuture.completedFuture(new StagedUpload(key));
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
            executor.shutdownNow();
        }
    }

    private BlobClient blob(String key) {
        return container.getBlobClient(prefix + key);
    }

    private BlockBlobClient block(String key) {
        return blob(key).getBlockBlobClient();
    }

    /** Runs a blocking SDK call on a virtual thread, mapping its failure. */
    private <T> CompletableFuture<T> call(String operation, String key, Callable<T> body) {
        CompletableFuture<T> result = new CompletableFuture<>();
        try {
            executor.execute(() -> {
                try {
                    result.complete(body.call());
                } catch (Throwable t) {
                    result.completeExceptionally(map(operation, key, t));
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            result.completeExceptionally(new ObjectStoreException(description + ": store is closed", e, false));
        }
        return result;
    }

    private ObjectStoreException map(String operation, String key, Throwable t) {
        if (t instanceof ObjectStoreException ose) {
            return ose;
        }
        String what = description + ": " + operation + (key == null ? "" : " '" + key + "'") + " failed: ";
        if (t instanceof BlobStorageException e) {
            int status = e.getStatusCode();
            String code = e.getErrorCode() == null ? "" : e.getErrorCode().toString();
            String text = what + status + " " + code;
            if (status == 404 && !BlobErrorCode.CONTAINER_NOT_FOUND.equals(e.getErrorCode())) {
                return new ObjectNotFoundException(text);
            }
            if (status == 416) {
                return new ObjectStoreException(text + " (range starts at or past the end of the object)", e, false);
            }
            boolean retriable = status == 429 || status == 500 || status == 502 || status == 503 || status == 504
                    || BlobErrorCode.SERVER_BUSY.equals(e.getErrorCode())
                    || BlobErrorCode.OPERATION_TIMED_OUT.equals(e.getErrorCode());
            return new ObjectStoreException(text, e, retriable);
        }
        if (isAuthenticationFailure(t)) {
            // No Entra ID token now (the identity endpoint failed or throttled a refresh): retried like an outage.
            return new ObjectStoreException(what + "no Entra ID token: " + t.getMessage(), t, true);
        }
        if (t instanceof UncheckedIOException || t instanceof IOException || t instanceof TimeoutException
                || t.getCause() instanceof IOException || t.getCause() instanceof TimeoutException
                || t instanceof InterruptedException) {
            return new ObjectStoreException(what + "client error: " + t, t, true);
        }
        return new ObjectStoreException(what + t, t, false);
    }

    /** A multipart upload as staged, uncommitted blocks of one block blob. */
    private final class StagedUpload implements MultipartUpload {
        private final String key;
        private final String token = String.format("%08x", ThreadLocalRandom.current().nextInt());
        private final Map<Integer, String> blockIds = new ConcurrentSkipListMap<>();

        StagedUpload(String key) {
            this.key = key;
        }

        @Override
        public String key() {
            return key;
        }

        private String blockId(int partNumber) {
            // Every id of a blob must have the same length: fixed-width token and part number.
            return Base64.getEncoder().encodeToString(
                    String.format("%s-%05d", token, partNumber).getBytes(StandardCharsets.US_ASCII));
        }

        @Override
        public CompletableFuture<Void> uploadPart(int partNumber, ByteBuf data) {
            StoreSupport.checkPartNumber(description, key, partNumber);
            byte[] bytes = StoreSupport.copyReadable(data);
            return call("Put Block " + partNumber, key, () -> {
                String id = blockId(partNumber);
                block(key).stageBlock(id, BinaryData.fromBytes(bytes));
                blockIds.put(partNumber, id);
                return null;
            });
        }

        @Override
        public CompletableFuture<Void> uploadPartCopy(int partNumber, String sourceKey, long position, long length) {
            StoreSupport.checkPartNumber(description, key, partNumber);
            return call("Put Block " + partNumber + " copied from '" + sourceKey + "'", key, () -> {
                BlobProperties source;
                try {
                    source = blob(sourceKey).getProperties();
                } catch (BlobStorageException e) {
                    if (e.getStatusCode() == 404) {
                        throw new ObjectNotFoundException(description + ": copy source '" + sourceKey
                                + "' does not exist");
                    }
                    throw e;
                }
                StoreSupport.checkCopyRange(description, sourceKey, source.getBlobSize(), position, length);
                ByteArrayOutputStream out = new ByteArrayOutputStream((int) length);
                blob(sourceKey).downloadStreamWithResponse(out, new BlobRange(position, length), null, null, false,
                        null, Context.NONE);
                if (out.size() != length) {
                    throw new ObjectStoreException(description + ": copy source '" + sourceKey + "' returned "
                            + out.size() + " bytes instead of " + length, true);
                }
                String id = blockId(partNumber);
                block(key).stageBlock(id, BinaryData.fromBytes(out.toByteArray()));
                blockIds.put(partNumber, id);
                return null;
            });
        }

        @Override
        public CompletableFuture<Void> complete() {
            List<String> ids = List.copyOf(blockIds.values());
            return call("Put Block List", key, () -> {
                block(key).commitBlockList(ids, true);
                return null;
            });
        }

        @Override
        public CompletableFuture<Void> abort() {
            blockIds.clear();
            return CompletableFuture.completedFuture(null);
        }
    }
}
