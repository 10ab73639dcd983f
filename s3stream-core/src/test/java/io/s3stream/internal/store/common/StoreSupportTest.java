package io.s3stream.internal.store.common;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StoreSupportTest {
    @Test
    void theObjectSizeComesFromContentRangeWhenItIsGiven() {
        assertThat(StoreSupport.sizeFromContentRange("bytes 900-999/1000")).isEqualTo(1000);
        assertThat(StoreSupport.sizeFromContentRange("bytes 0-0/ 7 ")).isEqualTo(7);
        assertThat(StoreSupport.sizeFromContentRange("bytes 0-9/*")).isEqualTo(-1);
        assertThat(StoreSupport.sizeFromContentRange("bytes 0-9/ten")).isEqualTo(-1);
        assertThat(StoreSupport.sizeFromContentRange("/10")).isEqualTo(-1);
        assertThat(StoreSupport.sizeFromContentRange(null)).isEqualTo(-1);
    }
}
