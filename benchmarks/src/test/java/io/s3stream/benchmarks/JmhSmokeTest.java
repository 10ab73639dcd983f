package io.s3stream.benchmarks;

import org.junit.jupiter.api.Test;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.BenchmarkList;
import org.openjdk.jmh.runner.BenchmarkListEntry;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;
import org.openjdk.jmh.runner.format.OutputFormatFactory;

import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs every JMH benchmark once, for one 100 ms iteration in this JVM, so none can rot: a smoke run, not a
 * measurement. Setups build small data sets ({@code s3stream.bench.smoke}) and each parameter is pinned to one value.
 * Part of {@code ./mvnw verify}; about a minute.
 */
class JmhSmokeTest {

    @Test
    void everyBenchmarkRunsOneShortIteration() throws Exception {
        System.setProperty("s3stream.bench.smoke", "true");
        Options options = new OptionsBuilder()
                .include("io\\.s3stream\\..*")
                .forks(0)
                .warmupIterations(0)
                .measurementIterations(1)
                .measurementTime(TimeValue.milliseconds(100))
                .shouldFailOnError(true)
                // One value per parameter keeps the run short; each benchmark method still runs.
                .param("backend", "mem", "blockdev")
                .param("recordBytes", "4096")
                .param("window", "16")
                .param("streams", "64")
                .param("skew", "1.2")
                .param("store", "shm")
                .param("records", "128")
                .param("members", "10")
                .param("subscription", "regex")
                .param("memory", "direct")
                .param("codec", "none", "zstd") // the in-place reader and the compressed path
                .build();
        Collection<RunResult> results = new Runner(options).run();

        Set<String> ran = new TreeSet<>();
        for (RunResult r : results) {
            assertTrue(r.getPrimaryResult().getScore() > 0, () -> r.getParams().getBenchmark() + " scored 0");
            ran.add(r.getParams().getBenchmark());
        }
        assertEquals(listedBenchmarks(), ran, "every benchmark in META-INF/BenchmarkList ran");
    }

    /** The benchmark methods JMH's annotation processor found. */
    private static Set<String> listedBenchmarks() {
        Set<String> out = new TreeSet<>();
        for (BenchmarkListEntry e : BenchmarkList.defaultList().getAll(
                OutputFormatFactory.createFormatInstance(System.out, VerboseMode.SILENT), List.of())) {
            out.add(e.getUsername());
        }
        assertTrue(out.size() >= 6, () -> "too few benchmarks listed: " + out);
        return out;
    }
}
