package io.s3stream.internal.manifest;

/**
 * Counters of one {@link ManifestMetadataStore}: object-store requests by kind (every attempt counts), commits that
 * won (log entries this instance created), races lost, checkpoints written.
 */
public record ManifestStats(long puts, long gets, long lists, long deletes, long commits, long lostRaces,
                            long checkpoints) {
}
