package io.s3stream.kafka.shell.group;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * The coordinator's work for one steady-state KIP-848 heartbeat ({@link ConsumerGroup#heartbeat}, what the group
 * coordinator's thread runs per ConsumerGroupHeartbeat): a group of {@code members} members that all subscribe to the
 * same 500 of 1,000 topics (4 partitions each), by regular expression ({@code regex}) or by name ({@code names}),
 * already stable; each op is the next member's heartbeat, reporting what it owns (as a set sorted the way the shell's
 * request decoding builds it). The topics view hands out one snapshot of the names, as the shell's does. A white-box
 * benchmark: it lives in the package it measures.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar GroupHeartbeatBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx512m"})
public class GroupHeartbeatBenchmark {
    private static final int TOPICS = 1_000;
    private static final String REGEX = "t-0[0-4].*"; // t-0000 .. t-0499

    @Param({"10", "100", "200"})
    int members;

    @Param({"regex", "names"})
    String subscription;

    private ConsumerGroup group;
    private ConsumerGroup.Topics topics;
    private final List<String> ids = new ArrayList<>();
    private final List<Integer> epochs = new ArrayList<>();
    private final List<Set<TopicPartition>> owned = new ArrayList<>();
    private int next;
    private long now;

    @Setup(Level.Trial)
    public void setUp() {
        Map<String, Integer> partitions = new TreeMap<>();
        List<String> subscribed = new ArrayList<>();
        for (int i = 0; i < TOPICS; i++) {
            String name = String.format("t-%04d", i);
            partitions.put(name, 4);
            if (name.matches(REGEX)) {
                subscribed.add(name);
            }
        }
        Set<String> names = Set.copyOf(partitions.keySet());
        topics = new ConsumerGroup.Topics() {
            @Override
            public int partitions(String topic) {
                return partitions.getOrDefault(topic, -1);
            }

            @Override
            public Set<String> names() {
                return names;
            }

            // No @Override on either version: the same source measures the ConsumerGroup of before the topics had a
            // version, of cf2ad7b (a version of the names, namesVersion) and of after (layoutVersion).
            public long layoutVersion() {
                return 1;
            }

            public long namesVersion() {
                return 1;
            }
        };
        group = new ConsumerGroup("bench");
        for (int m = 0; m < members; m++) {
            ids.add("member-" + m);
            epochs.add(0);
            owned.add(Set.of());
        }
        for (int m = 0; m < members; m++) {
            beat(m, subscription.equals("names") ? subscribed : null, subscription.equals("regex") ? REGEX : null);
        }
        for (int round = 0; round < 10; round++) { // until every member holds its target
            for (int m = 0; m < members; m++) {
                beat(m, null, null);
            }
        }
        if (!group.state().equals("Stable")) {
            throw new IllegalStateException("the group did not settle: " + group.state());
        }
    }

    private ConsumerGroup.Reply beat(int m, List<String> names, String regex) {
        ConsumerGroup.Reply r = group.heartbeat(new ConsumerGroup.Heartbeat(ids.get(m), epochs.get(m), null, null,
                60_000, names, regex, null, owned.get(m), "bench", "/127.0.0.1", 45_000), topics, now += 10);
        if (r.error() != Errors.NONE) {
            throw new IllegalStateException(r.error() + ": " + r.message());
        }
        epochs.set(m, r.memberEpoch());
        if (r.assignment() != null) { // what the broker hands the group: the partitions, sorted as GroupApis does
            Set<TopicPartition> sorted = new TreeSet<>(ServerAssignors.ORDER);
            sorted.addAll(r.assignment());
            owned.set(m, sorted);
        }
        return r;
    }

    @Benchmark
    public ConsumerGroup.Reply heartbeat() {
        int m = next;
        next = (next + 1) % members;
        return beat(m, null, null);
    }
}
