package io.s3stream.internal.compaction;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class KeyMapTest {
    private static ByteBuffer key(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void hashesAsTheReferenceMurmurHash3X64128() {
        // Expected values from the reference implementation (Python mmh3.hash64(data, 0, signed=True)).
        KeyMap map = new KeyMap(1 << 16);
        assertThat(map.hashOf(ByteBuffer.allocate(0))).containsExactly(0L, 0L);
        assertThat(map.hashOf(key("a"))).containsExactly(-8839064797231613815L, -1822486391929534118L);
        assertThat(map.hashOf(key("hello"))).containsExactly(-3758069500696749310L, 6565844092913065241L);
        assertThat(map.hashOf(key("The quick brown fox jumps over the lazy dog")))
                .containsExactly(-2068352364225029268L, 8809951995912426311L);
        byte[] bytes = new byte[33];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) i;
        }
        assertThat(map.hashOf(ByteBuffer.wrap(bytes))).containsExactly(9025539228862924306L, 6173450423443563275L);
        // Only the buffer's remaining bytes count, wherever they sit.
        ByteBuffer inside = ByteBuffer.wrap(("xx" + "hello" + "yy").getBytes(StandardCharsets.UTF_8)).position(2).limit(7);
        assertThat(map.hashOf(inside)).containsExactly(-3758069500696749310L, 6565844092913065241L);
        assertThat(inside.position()).isEqualTo(2);
    }

    @Test
    void keepsTheLatestOffsetAndRefusesNewKeysWhenFull() {
        KeyMap map = new KeyMap(24 * 100); // 100 slots, 90 keys
        assertThat(map.maxEntries()).isEqualTo(90);
        for (int i = 0; i < 90; i++) {
            assertThat(map.put(key("k" + i), i)).isTrue();
        }
        assertThat(map.put(key("one too many"), 1_000)).isFalse();
        assertThat(map.get(key("one too many"))).isEqualTo(-1);
        assertThat(map.put(key("k7"), 5_000)).as("a known key still updates").isTrue();
        assertThat(map.get(key("k7"))).isEqualTo(5_000);
        assertThat(map.get(key("k8"))).isEqualTo(8);
        assertThat(map.get(key("k0"))).isZero();
        assertThat(map.size()).isEqualTo(90);
        map.clear();
        assertThat(map.size()).isZero();
        assertThat(map.get(key("k8"))).isEqualTo(-1);
        assertThat(map.put(key("one too many"), 3)).isTrue();
    }
}
