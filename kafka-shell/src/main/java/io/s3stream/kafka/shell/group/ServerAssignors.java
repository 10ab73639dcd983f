package io.s3stream.kafka.shell.group;

import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The server-side assignors of the consumer group protocol (KIP-848): {@code uniform} (Kafka's default: balanced and
 * sticky) and {@code range} (per topic, contiguous ranges of partitions in member order). Pure functions of the
 * members' subscriptions, the partition counts and (for stickiness) the previous target assignment.
 */
final class ServerAssignors {
    static final String UNIFORM = "uniform";
    static final String RANGE = "range";

    private ServerAssignors() {
    }

    static boolean known(String name) {
        return UNIFORM.equals(name) || RANGE.equals(name);
    }

    /**
     * @param subscriptions member id → the topics it subscribes to (existing topics only)
     * @param partitions    topic → partition count
     * @param previous      member id → its previous target (uniform keeps what it can of it)
     * @return member id → its target, for every member (empty sets included)
     */
    static Map<String, Set<TopicPartition>> assign(String assignor, SortedMap<String, Set<String>> subscriptions,
                                                   Map<String, Integer> partitions,
                                                   Map<String, Set<TopicPartition>> previous) {
        return RANGE.equals(assignor) ? range(subscriptions, partitions) : uniform(subscriptions, partitions, previous);
    }

    private static Map<String, Set<TopicPartition>> empty(SortedMap<String, Set<String>> subscriptions) {
        Map<String, Set<TopicPartition>> out = new TreeMap<>();
        subscriptions.keySet().forEach(m -> out.put(m, new TreeSet<>(ORDER)));
        return out;
    }

    static final Comparator<TopicPartition> ORDER =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    static Map<String, Set<TopicPartition>> range(SortedMap<String, Set<String>> subscriptions,
                                                  Map<String, Integer> partitions) {
        Map<String, Set<TopicPartition>> out = empty(subscriptions);
        for (Map.Entry<String, Integer> t : new TreeMap<>(partitions).entrySet()) {
            List<String> members = subscriptions.entrySet().stream().filter(e -> e.getValue().contains(t.getKey()))
                    .map(Map.Entry::getKey).toList();
            if (members.isEmpty()) {
                continue;
            }
            int n = t.getValue();
            int per = n / members.size();
            int extra = n % members.size();
            int next = 0;
            for (int i = 0; i < members.size(); i++) {
                int count = per + (i < extra ? 1 : 0);
                for (int k = 0; k < count; k++) {
                    out.get(members.get(i)).add(new TopicPartition(t.getKey(), next++));
                }
            }
        }
        return out;
    }

    static Map<String, Set<TopicPartition>> uniform(SortedMap<String, Set<String>> subscriptions,
                                                    Map<String, Integer> partitions,
                                                    Map<String, Set<TopicPartition>> previous) {
        Map<String, Set<TopicPartition>> out = empty(subscriptions);
        List<TopicPartition> all = new ArrayList<>();
        for (Map.Entry<String, Integer> t : new TreeMap<>(partitions).entrySet()) {
            boolean wanted = subscriptions.values().stream().anyMatch(s -> s.contains(t.getKey()));
            for (int p = 0; wanted && p < t.getValue(); p++) {
                all.add(new TopicPartition(t.getKey(), p));
            }
        }
        long subscribers = subscriptions.values().stream().filter(s -> !s.isEmpty()).count();
        if (all.isEmpty() || subscribers == 0) {
            return out;
        }
        int cap = (int) ((all.size() + subscribers - 1) / subscribers);
        // Sticky: keep what each member had and may still have, up to the fair share.
        Map<TopicPartition, String> owner = new HashMap<>();
        for (Map.Entry<String, Set<TopicPartition>> e : new TreeMap<>(previous).entrySet()) {
            Set<String> subscribed = subscriptions.get(e.getKey());
            if (subscribed == null) {
                continue;
            }
            List<TopicPartition> had = new ArrayList<>(e.getValue());
            had.sort(ORDER);
            for (TopicPartition tp : had) {
                Integer count = partitions.get(tp.topic());
                if (subscribed.contains(tp.topic()) && count != null && tp.partition() < count
                        && !owner.containsKey(tp) && out.get(e.getKey()).size() < cap) {
                    out.get(e.getKey()).add(tp);
                    owner.put(tp, e.getKey());
                }
            }
        }
        // The rest to the least loaded member that subscribes to its topic.
        for (TopicPartition tp : all) {
            if (!owner.containsKey(tp)) {
                String best = leastLoaded(out, subscriptions, tp.topic());
                out.get(best).add(tp);
                owner.put(tp, best);
            }
        }
        // Balance: move partitions from the most to the least loaded member that can take them, until within one.
        for (int moves = 0; moves < all.size(); moves++) {
            boolean moved = false;
            for (String from : out.keySet()) {
                for (TopicPartition tp : List.copyOf(out.get(from))) {
                    String to = leastLoaded(out, subscriptions, tp.topic());
                    if (out.get(from).size() > out.get(to).size() + 1) {
                        out.get(from).remove(tp);
                        out.get(to).add(tp);
                        moved = true;
                        break;
                    }
                }
                if (moved) {
                    break;
                }
            }
            if (!moved) {
                break;
            }
        }
        return out;
    }

    private static String leastLoaded(Map<String, Set<TopicPartition>> out, SortedMap<String, Set<String>> subscriptions,
                                      String topic) {
        String best = null;
        for (Map.Entry<String, Set<String>> e : subscriptions.entrySet()) {
            if (e.getValue().contains(topic) && (best == null || out.get(e.getKey()).size() < out.get(best).size())) {
                best = e.getKey();
            }
        }
        return best;
    }
}
