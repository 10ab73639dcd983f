package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.testing.ObjectStoreContractTest;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The contract against {@link MemObjectStore}, plus its registry of named buckets. */
class MemObjectStoreTest extends ObjectStoreContractTest {
    private final String name = "contract-" + UUID.randomUUID();

    @Override
    protected ObjectStore createStore() {
        return ObjectStores.open("mem://" + name);
    }

    @Override
    protected void cleanUpStore() {
        MemObjectStore.clear(name);
    }

    @Test
    void storesOpenedOnTheSameNameShareObjects() {
        put("shared", bytes(10));
        try (ObjectStore other = ObjectStores.open("mem://" + name)) {
            assertThat(await(other.head("shared"))).isPresent();
            ByteBuf data = Unpooled.wrappedBuffer(new byte[] {7});
            try {
                await(other.put("from-other", data));
            } finally {
                data.release();
            }
        }
        assertThat(getBytes("from-other")).containsExactly(7);
        assertThat(store.description()).isEqualTo("mem://" + name);
    }

    @Test
    void closingAStoreKeepsTheObjectsForTheNextOpen() {
        put("kept", bytes(10));
        store.close();
        assertThat(failure(store.head("kept"))).isInstanceOf(ObjectStoreException.class).hasMessageContaining("closed");
        store = ObjectStores.open("mem://" + name);
        assertThat(await(store.head("kept"))).isPresent();
    }

    @Test
    void clearIsolatesTests() {
        put("cleared", bytes(10));
        MemObjectStore.clear(name);
        store.close();
        store = ObjectStores.open("mem://" + name);
        assertThat(await(store.list(""))).isEmpty();
    }

    @Test
    void storedBytesAreCopies() {
        byte[] payload = {1, 2, 3};
        ByteBuf data = Unpooled.wrappedBuffer(payload);
        try {
            await(store.put("copied", data));
        } finally {
            data.release();
        }
        payload[0] = 9;
        assertThat(getBytes("copied")).containsExactly(1, 2, 3);
    }

    @Test
    void partsSmallerThanTheMinimumAreRefusedAtComplete() {
        try (ObjectStore small = ObjectStores.open("mem://" + name + "?minPartSizeBytes=100")) {
            assertThat(small.minPartSizeBytes()).isEqualTo(100);
            ObjectStore.MultipartUpload upload = await(small.startMultipart("too-small"));
            uploadPart(upload, 1, bytes(99));
            uploadPart(upload, 2, bytes(10));
            assertThat(failure(upload.complete())).isInstanceOf(ObjectStoreException.class)
                    .hasMessageContaining("part 1").hasMessageContaining("100");
            uploadPart(upload, 1, bytes(100));
            await(upload.complete());
            assertThat(await(small.head("too-small")).orElseThrow().sizeBytes()).isEqualTo(110);
            assertThat(failure(upload.uploadPart(3, Unpooled.EMPTY_BUFFER))).hasMessageContaining("completed");
            assertThat(failure(small.startMultipart("x").join().uploadPart(0, Unpooled.EMPTY_BUFFER)))
                    .hasMessageContaining("part number 0");
        }
    }

    @Test
    void completeWithoutPartsFails() {
        ObjectStore.MultipartUpload upload = await(store.startMultipart("no-parts"));
        assertThat(failure(upload.complete())).isInstanceOf(ObjectStoreException.class);
        assertThat(await(store.head("no-parts"))).isEmpty();
    }

    @Test
    void malformedMemUrisAreRefused() {
        for (String uri : List.of("mem://", "mem://x/y", "mem://x?minPartSizeBytes=0", "mem://x?color=blue")) {
            // Named without the query, which may hold keys.
            String named = uri.contains("?") ? uri.substring(0, uri.indexOf('?')) : uri;
            assertThatThrownBy(() -> ObjectStores.open(uri).close()).as(uri)
                    .isInstanceOf(RuntimeException.class).hasMessageContaining(named).hasMessageNotContaining("?");
        }
    }
}
