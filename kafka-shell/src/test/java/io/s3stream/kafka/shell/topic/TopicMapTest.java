package io.s3stream.kafka.shell.topic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.s3stream.kafka.shell.topic.TopicRegistry.Slot;
import io.s3stream.kafka.shell.topic.TopicRegistry.Topic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

class TopicMapTest {
    private static Topic topic(String name, int partitions) {
        List<Slot> slots = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            slots.add(new Slot(i, 100 + i));
        }
        return new Topic(name, Uuid.randomUuid(), List.copyOf(slots), Map.of(), () -> true);
    }

    @Test
    void theLayoutVersionMovesWhenANameComesOrGoesOrATopicGrowsAndNotWhenItIsAltered() {
        TopicMap map = new TopicMap();
        TopicMap.Names empty = map.names();
        assertThat(empty.names()).isEmpty();

        map.put("a", topic("a", 1));
        TopicMap.Names one = map.names();
        assertThat(one.version()).isGreaterThan(empty.version());
        assertThat(one.names()).containsExactly("a");
        assertThat(map.names()).as("unchanged: the same snapshot").isSameAs(one);

        Topic a = map.get("a");
        map.put("a", new Topic("a", a.id(), a.slots(), Map.of("retention.ms", "1000"), () -> true)); // altered
        map.putIfAbsent("a", topic("a", 5));
        assertThat(map.names()).as("configs are not the layout").isSameAs(one);

        map.put("a", topic("a", 3)); // grown (here under a new id, as a recreation would be)
        TopicMap.Names grown = map.names();
        assertThat(grown.version()).isGreaterThan(one.version());
        assertThat(grown.names()).containsExactly("a");
        assertThat(map.get("a").slots()).hasSize(3);
        map.put("a", topic("a", 3)); // recreated with as many partitions: the layout is the same
        assertThat(map.names()).isSameAs(grown);

        map.putIfAbsent("b", topic("b", 1));
        TopicMap.Names two = map.names();
        assertThat(two.version()).isGreaterThan(grown.version());
        assertThat(two.names()).containsExactlyInAnyOrder("a", "b");

        assertThat(map.remove("missing")).isNull();
        assertThat(map.names()).isSameAs(two);
        assertThat(map.remove("a")).isNotNull();
        TopicMap.Names three = map.names();
        assertThat(three.version()).isGreaterThan(two.version());
        assertThat(three.names()).containsExactly("b");
        assertThat(two.names()).as("an older snapshot does not change").containsExactlyInAnyOrder("a", "b");
        assertThatThrownBy(() -> three.names().add("c")).isInstanceOf(UnsupportedOperationException.class);
        assertThat(map.sorted().keySet()).containsExactly("b");
    }

    @Test
    void namesKafkaRefusesAreRefused() {
        for (String bad : new String[] {"", ".", "..", "a b", "a/b", "x".repeat(250)}) {
            assertThatThrownBy(() -> TopicMap.validateName(bad)).as(bad).isInstanceOf(InvalidTopicException.class)
                    .hasMessageContaining("is illegal");
        }
        TopicMap.validateName("orders.v2_eu-1");
        TopicMap.validateName("x".repeat(249));
    }

    @Test
    void byIdFindsTheTopicNowUnderItsIdAndNothingForAnOldOne() {
        TopicMap map = new TopicMap();
        Topic a = topic("a", 1);
        map.put("a", a);
        assertThat(map.byId(a.id())).isSameAs(a);

        Topic grown = new Topic("a", a.id(), List.of(new Slot(0, 100), new Slot(1, 101)), Map.of(), () -> true);
        map.put("a", grown);
        assertThat(map.byId(a.id())).isSameAs(grown);

        Topic recreated = topic("a", 1); // deleted and created again elsewhere: a new id under the same name
        map.put("a", recreated);
        assertThat(map.byId(a.id())).isNull();
        assertThat(map.byId(recreated.id())).isSameAs(recreated);

        map.remove("a");
        assertThat(map.byId(recreated.id())).isNull();
        map.putIfAbsent("a", recreated); // a failed delete puts it back
        assertThat(map.byId(recreated.id())).isSameAs(recreated);
        assertThat(map.byId(Uuid.randomUuid())).isNull();
    }

    @Test
    void concurrentChangesLeaveTheIdIndexExactlyTheNameMap() throws Exception {
        TopicMap map = new TopicMap();
        int threads = 4;
        List<Thread> writers = new ArrayList<>();
        ConcurrentHashMap<Uuid, Boolean> everSeen = new ConcurrentHashMap<>();
        for (int w = 0; w < threads; w++) {
            long seed = w;
            writers.add(Thread.ofPlatform().start(() -> {
                Random r = new Random(seed);
                for (int i = 0; i < 20_000; i++) {
                    String name = "t" + r.nextInt(8);
                    int op = r.nextInt(4);
                    if (op == 0) {
                        map.remove(name);
                    } else if (op == 1) {
                        Topic t = topic(name, 1);
                        everSeen.put(t.id(), true);
                        map.putIfAbsent(name, t);
                    } else {
                        Topic now = map.get(name);
                        Topic t = now != null && op == 2
                                ? new Topic(name, now.id(), now.slots(), Map.of("n", "" + i), () -> true)
                                : topic(name, 1);
                        everSeen.put(t.id(), true);
                        map.put(name, t);
                    }
                    Topic current = map.get(name);
                    Topic found = map.byId(current == null ? Uuid.ZERO_UUID : current.id());
                    if (found != null) {
                        assertThat(found.name()).isEqualTo(name);
                    }
                }
            }));
        }
        for (Thread t : writers) {
            t.join();
        }
        for (Uuid id : everSeen.keySet()) {
            Topic found = map.byId(id);
            if (found != null) {
                assertThat(map.get(found.name())).isSameAs(found);
            }
        }
        for (String name : map.keySet()) {
            assertThat(map.byId(map.get(name).id())).as(name).isSameAs(map.get(name));
        }
    }
}
