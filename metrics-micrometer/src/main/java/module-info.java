/**
 * The engine's counters as Micrometer meters: {@link io.s3stream.metrics.micrometer.S3StreamMeterBinder}. Micrometer
 * is required transitively (its {@code MeterBinder} is this module's API) although its jar is an automatic module.
 */
@SuppressWarnings("requires-transitive-automatic")
module io.s3stream.metrics.micrometer {
    requires transitive io.s3stream.core;
    requires transitive micrometer.core;

    exports io.s3stream.metrics.micrometer;
}
