package io.s3stream.kafka.shell.topic;

import io.s3stream.kafka.shell.topic.TopicRegistry.Topic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidTopicException;

import java.util.Collection;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The registry's topics by name and by id, with a version of their <em>layout</em>, the names and each topic's
 * partition count: it moves on whenever a name is added or removed or a topic's partition count changes (not when a
 * topic's configuration is altered), after the change, so a reader that takes the version and then the names or the
 * counts never keeps a layout older than the version it took. Views that derive something from the layout alone (a
 * consumer group resolving its members' regular expressions, the partition counts its assignment was computed from)
 * keep it until the version moves.
 *
 * <p>Changes are serialized (they are rare: a topic created, grown, altered or deleted); reads take no lock. The name
 * map is the truth and the id index follows it within each change, so a lookup by id is checked against the name map
 * and answers what the name map holds, or nothing while a change is half made.
 */
public final class TopicMap {
    private final ConcurrentHashMap<String, Topic> byName = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Uuid, Topic> byId = new ConcurrentHashMap<>();
    private final AtomicLong layoutVersion = new AtomicLong();
    private volatile Names names = new Names(0, Set.of());

    /** The set of topic names at some layout version: an unmodifiable snapshot, shared by every reader of it. */
    public record Names(long version, Set<String> names) {
    }

    /** Refuses a name Kafka refuses: empty, "." or "..", over 249 characters, or other than [a-zA-Z0-9._-]. */
    static void validateName(String name) {
        if (name == null || name.isEmpty() || name.length() > 249 || name.equals(".") || name.equals("..")
                || !name.matches("[a-zA-Z0-9._-]+")) {
            throw new InvalidTopicException("Topic name '" + name + "' is illegal: use up to 249 of [a-zA-Z0-9._-]");
        }
    }

    Topic get(String name) {
        return byName.get(name);
    }

    boolean containsKey(String name) {
        return byName.containsKey(name);
    }

    /** The topic of id {@code id} now, or null. */
    Topic byId(Uuid id) {
        Topic indexed = byId.get(id);
        Topic current = indexed == null ? null : byName.get(indexed.name());
        return current != null && current.id().equals(id) ? current : null;
    }

    synchronized void put(String name, Topic topic) {
        Topic previous = byName.put(name, topic);
        byId.put(topic.id(), topic);
        if (previous != null && !previous.id().equals(topic.id())) {
            byId.remove(previous.id(), previous);
        }
        if (previous == null || previous.slots().size() != topic.slots().size()) {
            layoutVersion.incrementAndGet();
        }
    }

    synchronized void putIfAbsent(String name, Topic topic) {
        if (byName.putIfAbsent(name, topic) == null) {
            byId.put(topic.id(), topic);
            layoutVersion.incrementAndGet();
        }
    }

    synchronized Topic remove(String name) {
        Topic removed = byName.remove(name);
        if (removed != null) {
            byId.remove(removed.id(), removed);
            layoutVersion.incrementAndGet();
        }
        return removed;
    }

    Set<String> keySet() {
        return byName.keySet();
    }

    Collection<Topic> values() {
        return byName.values();
    }

    SortedMap<String, Topic> sorted() {
        return new TreeMap<>(byName);
    }

    /** The names now, rebuilt only when the layout version moved since the last call. */
    Names names() {
        Names cached = names;
        long version = layoutVersion.get();
        if (cached.version() == version) {
            return cached;
        }
        Names fresh = new Names(version, Set.copyOf(byName.keySet()));
        names = fresh; // a racing reader may store an older snapshot: the next call sees its version and rebuilds
        return fresh;
    }
}
