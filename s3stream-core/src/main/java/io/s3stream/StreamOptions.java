package io.s3stream;

import java.util.Map;
import java.util.Objects;

/**
 * Per-stream settings given at creation.
 *
 * @param startOffset offset the stream starts at (its first append gets this offset); 0 unless migrating a log
 * @param tags        small string attributes stored with the stream's metadata for the embedding system
 */
public record StreamOptions(long startOffset, Map<String, String> tags) {

    public StreamOptions {
        if (startOffset < 0) {
            throw new InvalidConfigException("StreamOptions.startOffset must be >= 0, was " + startOffset);
        }
        tags = Map.copyOf(Objects.requireNonNull(tags, "tags"));
    }

    public static StreamOptions defaults() {
        return new StreamOptions(0, Map.of());
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link StreamOptions}; every setter is optional. */
    public static final class Builder {
        private long startOffset;
        private Map<String, String> tags = Map.of();

        private Builder() {
        }

        public Builder startOffset(long startOffset) {
            this.startOffset = startOffset;
            return this;
        }

        public Builder tags(Map<String, String> tags) {
            this.tags = tags;
            return this;
        }

        public StreamOptions build() {
            return new StreamOptions(startOffset, tags);
        }
    }
}
