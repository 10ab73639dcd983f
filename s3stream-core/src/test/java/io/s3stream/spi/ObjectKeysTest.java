package io.s3stream.spi;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;

class ObjectKeysTest {
    @Test
    void everyDataKeyIsOneUnderAnyPrefix() {
        Random random = new Random(5);
        for (int i = 0; i < 1_000; i++) {
            long id = i < 10 ? i : random.nextLong() & Long.MAX_VALUE;
            String key = ObjectKeys.dataKey(id);
            assertThat(ObjectKeys.isDataKey(key)).as(key).isTrue();
            assertThat(ObjectKeys.isDataKey("cluster-1/" + key)).as(key).isTrue();
        }
    }

    @Test
    void otherKeysAreNot() {
        String data = ObjectKeys.dataKey(42);
        for (String key : List.of("", "data/", "manifest/log/00000000000000000064", "wal/0001/segment",
                "x" + data, data + "/more", data.toUpperCase(), data.replace('/', '-'),
                "data/abcd/0000000000000g00", "data/abc/00000000000000000", "filler")) {
            assertThat(ObjectKeys.isDataKey(key)).as(key).isFalse();
        }
    }
}
