package io.s3stream.kafka.shell.topic;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** What DescribeConfigs shows of values that can hold credentials. */
class SensitiveConfigsTest {
    @Test
    void credentialsInStoreUrisAreMaskedAndTheRestIsShown() {
        assertThat(SensitiveConfigs.masked("s3://b/p?endpoint=http://h:9000&accessKey=AKIA1&secretKey=s3cr3t&sse=AES256"))
                .isEqualTo("s3://b/p?endpoint=http://h:9000&accessKey=[hidden]&secretKey=[hidden]&sse=AES256");
        assertThat(SensitiveConfigs.masked("azblob://a/c/p?key=AAAA&encryptionScope=scope-1"))
                .isEqualTo("azblob://a/c/p?key=[hidden]&encryptionScope=scope-1");
        // A connection string carries the account key inside its own value.
        assertThat(SensitiveConfigs.masked("azblob://a/c/p?connectionString=DefaultEndpointsProtocol=https;"
                + "AccountName=a;AccountKey=Zm9vYmFy;EndpointSuffix=core.windows.net&connectTimeoutMs=2000"))
                .isEqualTo("azblob://a/c/p?connectionString=[hidden]&connectTimeoutMs=2000");
        assertThat(SensitiveConfigs.masked("blockdev:///var/lib/wal.img?capacity=2GiB"))
                .isEqualTo("blockdev:///var/lib/wal.img?capacity=2GiB");
    }

    @Test
    void kafkasPasswordKeysAreSensitiveWhateverTheirListener() {
        assertThat(SensitiveConfigs.sensitiveKey("listener.name.internal.ssl.keystore.password")).isTrue();
        assertThat(SensitiveConfigs.sensitiveKey("listener.name.sasl_ssl.plain.sasl.jaas.config")).isTrue();
        assertThat(SensitiveConfigs.sensitiveKey("ssl.key.password")).isTrue();
        assertThat(SensitiveConfigs.sensitiveKey("ssl.keystore.location")).isFalse();
    }
}
