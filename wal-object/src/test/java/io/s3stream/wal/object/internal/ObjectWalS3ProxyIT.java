package io.s3stream.wal.object.internal;

import io.s3stream.spi.ObjectStore;
import io.s3stream.testing.S3Server;
import io.s3stream.testing.TestStores;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The shared-WAL contract on an object WAL in a S3Proxy bucket (a real S3 server, started as a process). */
class ObjectWalS3ProxyIT extends ObjectWalContractSupport {
    @RegisterExtension
    static final S3Server S3 = S3Server.s3proxy();

    @Override
    protected ObjectStore newStore(String name) {
        return TestStores.asEngineWould(TestStores.open(S3.uri(name)));
    }
}
