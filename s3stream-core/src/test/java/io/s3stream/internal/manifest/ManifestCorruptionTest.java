package io.s3stream.internal.manifest;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.s3stream.CorruptDataException;
import io.s3stream.internal.store.MemObjectStore;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A damaged manifest object stops start-up with a message naming its key; history is never skipped. */
class ManifestCorruptionTest {

    private final String name = "mx-" + UUID.randomUUID();
    private ObjectStore objects;
    private final ManifestConfig config = ManifestConfig.DEFAULTS.withPollMs(0).withCheckpointEvery(10);

    @BeforeEach
    void fill() throws Exception {
        objects = ObjectStores.open("mem://" + name);
        try (ManifestMetadataStore store = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
            for (int i = 0; i < 15; i++) { // checkpoint at 10, entries 11..15 after it
                store.putKv("k" + i, new byte[] {(byte) i}).get();
            }
        }
        // The checkpoint is written off the commit path: wait for it.
        for (int i = 0; i < 200 && objects.list("manifest/checkpoint/").get().isEmpty(); i++) {
            Thread.sleep(10);
        }
        assertThat(objects.list("manifest/checkpoint/").get()).hasSize(1);
    }

    @AfterEach
    void clear() {
        objects.close();
        MemObjectStore.clear(name);
    }

    private void rewrite(String key, UnaryOperator<byte[]> change) throws Exception {
        ByteBuf buf = objects.get(key).get();
        byte[] bytes = ByteBufUtil.getBytes(buf);
        buf.release();
        ByteBuf out = Unpooled.wrappedBuffer(change.apply(bytes));
        try {
            objects.put(key, out).get();
        } finally {
            out.release();
        }
    }

    private void assertStartUpFails(String key, String fragment) {
        assertThatThrownBy(() -> ManifestMetadataStore.open(objects, InstantSource.system(), config).close())
                .isInstanceOf(CorruptDataException.class).hasMessageContaining(key).hasMessageContaining(fragment);
    }

    private static byte[] flip(byte[] b, int at) {
        byte[] c = b.clone();
        c[at] ^= 0x40;
        return c;
    }

    @Test
    void flippedByteInAnEntry() throws Exception {
        String key = "manifest/log/00000000000000000012";
        rewrite(key, b -> flip(b, b.length - 2));
        assertStartUpFails(key, "CRC32C");
    }

    @Test
    void flippedByteInTheCheckpoint() throws Exception {
        String key = "manifest/checkpoint/00000000000000000010";
        rewrite(key, b -> flip(b, 60));
        assertStartUpFails(key, "CRC32C");
    }

    @Test
    void truncatedEntry() throws Exception {
        String key = "manifest/log/00000000000000000013";
        rewrite(key, b -> Arrays.copyOf(b, b.length - 5));
        assertStartUpFails(key, "truncated");
    }

    @Test
    void unknownVersion() throws Exception {
        String key = "manifest/log/00000000000000000011";
        rewrite(key, b -> {
            byte[] c = b.clone();
            ByteBuffer.wrap(c).putShort(ManifestFormat.VERSION_OFFSET, (short) 9);
            return c;
        });
        assertStartUpFails(key, "version 9");
    }

    @Test
    void missingEntryIsAGapNotSkipped() throws Exception {
        String key = "manifest/log/00000000000000000012";
        objects.delete(List.of(key)).get();
        assertStartUpFails(key, "gap");
    }

    @Test
    void intactManifestReopensWithEveryKey() throws Exception {
        try (ManifestMetadataStore store = ManifestMetadataStore.open(objects, InstantSource.system(), config)) {
            assertThat(store.viewSeq()).isEqualTo(15);
            assertThat(store.listKv("k").get()).hasSize(15);
        }
        List<ObjectInfo> log = objects.list("manifest/log/").get();
        assertThat(log).hasSize(15); // one checkpoint only: nothing is deleted yet
    }
}
