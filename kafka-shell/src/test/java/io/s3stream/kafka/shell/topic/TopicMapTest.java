package io.s3stream.kafka.shell.topic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.s3stream.kafka.shell.topic.TopicRegistry.Slot;
import io.s3stream.kafka.shell.topic.TopicRegistry.Topic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

class TopicMapTest {
    private static Topic topic(String name, int partitions) {
        List<Slot> slots = new java.util.ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            slots.add(new Slot(i, 100 + i));
        }
        return new Topic(name, Uuid.randomUuid(), List.copyOf(slots), Map.of(), () -> true);
    }

    @Test
    void theNamesVersionMovesWhenANameComesOrGoesAndNotWhenATopicChanges() {
        TopicMap map = new TopicMap();
        TopicMap.Names empty = map.names();
        assertThat(empty.names()).isEmpty();

        map.put("a", topic("a", 1));
        TopicMap.Names one = map.names();
        assertThat(one.version()).isGreaterThan(empty.version());
        assertThat(one.names()).containsExactly("a");
        assertThat(map.names()).as("unchanged: the same snapshot").isSameAs(one);

        map.put("a", topic("a", 3)); // grown or altered: the same name
        map.putIfAbsent("a", topic("a", 1));
        assertThat(map.names()).isSameAs(one);
        assertThat(map.get("a").slots()).hasSize(3);

        map.putIfAbsent("b", topic("b", 1));
        TopicMap.Names two = map.names();
        assertThat(two.version()).isGreaterThan(one.version());
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
}
