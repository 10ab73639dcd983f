package io.s3stream.testing;

import java.util.SplittableRandom;
import java.util.stream.LongStream;

/**
 * Seeds for property tests written with plain JUnit 5: one parameterized invocation per seed, each building its input
 * from a {@link java.util.Random} seeded with it, so a failure names the seed that reproduces it.
 *
 * <pre>{@code
 * static LongStream seeds() { return Seeds.of(40); }
 *
 * @ParameterizedTest(name = "seed {0}") @MethodSource("seeds")
 * void holds(long seed) { Random random = new Random(seed); ... }
 * }</pre>
 *
 * The seeds are a fixed sequence by default, so every CI run checks the same cases. {@code -Ds3stream.test.seed=N}
 * replays one seed (the one in a failing invocation's name); {@code -Ds3stream.test.seeds=random} draws a new sequence
 * and prints its base, for exploratory runs.
 */
public final class Seeds {
    private static final long DEFAULT_BASE = 0x5EED_5EED_2026_1124L;

    private Seeds() {
    }

    /** {@code tries} seeds, or the one given by {@code -Ds3stream.test.seed}. */
    public static LongStream of(int tries) {
        String one = System.getProperty("s3stream.test.seed");
        if (one != null && !one.isBlank()) {
            return LongStream.of(Long.parseLong(one.trim()));
        }
        long base = DEFAULT_BASE;
        if ("random".equals(System.getProperty("s3stream.test.seeds"))) {
            base = System.nanoTime();
            System.out.println("property seeds drawn from base " + base);
        }
        SplittableRandom random = new SplittableRandom(base);
        return LongStream.generate(random::nextLong).limit(tries);
    }
}
