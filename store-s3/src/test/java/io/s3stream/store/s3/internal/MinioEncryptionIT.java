package io.s3stream.store.s3.internal;

import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ServerSideEncryption;

import java.net.URI;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Server-side encryption on MinIO (started with a static KMS key): with {@code sse=AES256} or {@code sse=aws:kms}
 * every object the store writes — a PUT, a multipart upload, and one assembled from copied parts as compaction does —
 * is stored encrypted, which HeadObject reports; a KMS key that does not exist fails the open, naming the key.
 */
class MinioEncryptionIT {
    @RegisterExtension
    static final S3Server S3 = S3Server.minio();

    /** What the server says about an object, asked with a client of its own. */
    private static HeadObjectResponse head(String prefix, String key) {
        S3Server.Running s = S3.server();
        try (S3AsyncClient client = S3AsyncClient.builder().endpointOverride(URI.create(s.endpoint()))
                .region(Region.of(s.region())).forcePathStyle(true)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(s.accessKey(),
                        s.secretKey()))).build()) {
            return client.headObject(r -> r.bucket(s.bucket()).key(prefix + "/" + key)).join();
        }
    }

    /** A PUT, a multipart upload and a copy-assembled object, each reported encrypted as {@code expected}. */
    private static void everyWriteIsEncrypted(String settings, ServerSideEncryption expected, String keyId)
            throws Exception {
        String prefix = "sse-" + UUID.randomUUID();
        try (ObjectStore store = TestStores.open(S3.uri(prefix) + settings)) {
            byte[] data = new byte[64 * 1024];
            new java.util.Random(1).nextBytes(data);
            store.put("put", Unpooled.wrappedBuffer(data)).join();
            ObjectStore.MultipartUpload upload = store.startMultipart("multipart").join();
            upload.uploadPart(1, Unpooled.wrappedBuffer(data)).join();
            upload.complete().join();
            ObjectStore.MultipartUpload copy = store.startMultipart("copied").join();
            copy.uploadPartCopy(1, "put", 0, data.length).join();
            copy.complete().join();
            for (String key : new String[] {"put", "multipart", "copied"}) {
                HeadObjectResponse h = head(prefix, key);
                assertThat(h.serverSideEncryption()).as(key).isEqualTo(expected);
                if (keyId != null) {
                    assertThat(h.ssekmsKeyId()).as(key).contains(keyId);
                }
            }
            // The open-time probe left nothing behind.
            assertThat(store.list("").join()).extracting(o -> o.key())
                    .containsExactlyInAnyOrder("put", "multipart", "copied");
        }
    }

    @Test
    void sseS3EncryptsEveryObjectTheStoreWrites() throws Exception {
        everyWriteIsEncrypted("&sse=AES256", ServerSideEncryption.AES256, null);
    }

    @Test
    void sseKmsWithAKeyIdEncryptsEveryObjectWithThatKey() throws Exception {
        everyWriteIsEncrypted("&sse=aws:kms&sseKmsKeyId=" + S3Server.KMS_KEY_ID, ServerSideEncryption.AWS_KMS,
                S3Server.KMS_KEY_ID);
    }

    @Test
    void aKmsKeyThatDoesNotExistFailsTheOpen() {
        assertThatThrownBy(() -> TestStores.open(S3.uri("sse-bad") + "&sse=aws:kms&sseKmsKeyId=no-such-key"))
                .isInstanceOf(ObjectStoreException.class).hasMessageContaining("server-side encryption")
                .hasMessageContaining("no-such-key");
        assertThatThrownBy(() -> TestStores.open(S3.uri("sse-bad") + "&sse=rot13"))
                .isInstanceOf(ObjectStoreException.class).hasMessageContaining("sse must be AES256");
        assertThatThrownBy(() -> TestStores.open(S3.uri("sse-bad") + "&sseKmsKeyId=k"))
                .isInstanceOf(ObjectStoreException.class).hasMessageContaining("sseKmsKeyId needs sse=aws:kms");
    }
}
