package io.s3stream.kafka.shell;

import io.s3stream.KeyValues;
import io.s3stream.Stream;
import io.s3stream.StreamOptions;
import io.s3stream.StreamStorage;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;

/**
 * Topics of this shell: name → id, configs and one {@link PartitionLog} (one stream) per partition.
 *
 * <p>Design note: each topic is one key {@code kafka/topic/<name>} in the manifest's key-value space holding its id,
 * its configs and, per partition, the stream id and the epoch it was last opened at. Opening a partition bumps its
 * epoch (compare-and-set), which fences any earlier owner of the stream.
 */
final class TopicRegistry {
    static final String PREFIX = "kafka/topic/";

    /** A topic and its open partitions. */
    record Topic(String name, Uuid id, List<PartitionLog> partitions, Map<String, String> configs) {
        PartitionLog partition(int p) {
            return p >= 0 && p < partitions.size() ? partitions.get(p) : null;
        }
    }

    private final StreamStorage storage;
    private final KeyValues kv;
    private final Executor blocking;
    private final ConcurrentHashMap<String, Topic> topics = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, CompletableFuture<Topic>> creating = new ConcurrentHashMap<>();

    TopicRegistry(StreamStorage storage, Executor blocking) {
        this.storage = storage;
        this.kv = storage.keyValues();
        this.blocking = blocking;
    }

    /** Opens every topic recorded in the key-value space (startup). */
    void load() {
        for (Map.Entry<String, byte[]> e : kv.list(PREFIX).join().entrySet()) {
            String name = e.getKey().substring(PREFIX.length());
            Properties p = parse(e.getValue());
            int n = Integer.parseInt(p.getProperty("partitions"));
            List<PartitionLog> logs = new ArrayList<>();
            Properties updated = (Properties) p.clone();
            for (int i = 0; i < n; i++) {
                long streamId = Long.parseLong(p.getProperty("stream." + i));
                long epoch = Long.parseLong(p.getProperty("epoch." + i, "0")) + 1;
                updated.setProperty("epoch." + i, Long.toString(epoch));
                Stream s = storage.openStream(streamId, epoch).join();
                logs.add(new PartitionLog(name, i, s, blocking));
            }
            if (!kv.compareAndSet(e.getKey(), e.getValue(), format(updated)).join()) {
                throw new IllegalStateException("topic " + name + " changed while this shell opened it");
            }
            topics.put(name, new Topic(name, Uuid.fromString(p.getProperty("id")), List.copyOf(logs), configsOf(p)));
        }
    }

    Topic get(String name) {
        return topics.get(name);
    }

    Topic byId(Uuid id) {
        for (Topic t : topics.values()) {
            if (t.id().equals(id)) {
                return t;
            }
        }
        return null;
    }

    Collection<Topic> all() {
        return new TreeMap<>(topics).values();
    }

    static void validateName(String name) {
        if (name == null || name.isEmpty() || name.length() > 249 || name.equals(".") || name.equals("..")
                || !name.matches("[a-zA-Z0-9._-]+")) {
            throw new InvalidTopicException("Topic name '" + name + "' is illegal: use up to 249 of [a-zA-Z0-9._-]");
        }
    }

    /** Creates a topic with {@code partitions} streams; fails with TopicExistsException if it exists. */
    CompletableFuture<Topic> create(String name, int partitions, Map<String, String> configs) {
        try {
            validateName(name);
        } catch (InvalidTopicException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (partitions < 1) {
            return CompletableFuture.failedFuture(new InvalidPartitionsException("Number of partitions must be at least 1"));
        }
        if (topics.containsKey(name)) {
            return CompletableFuture.failedFuture(new TopicExistsException("Topic '" + name + "' already exists."));
        }
        CompletableFuture<Topic> mine = new CompletableFuture<>();
        CompletableFuture<Topic> existing = creating.putIfAbsent(name, mine);
        if (existing != null) {
            return existing.thenCompose(t -> CompletableFuture.failedFuture(
                    new TopicExistsException("Topic '" + name + "' already exists.")));
        }
        List<CompletableFuture<Stream>> streams = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            streams.add(storage.createStream(StreamOptions.builder()
                    .tags(Map.of("kafka.topic", name, "kafka.partition", Integer.toString(i))).build()));
        }
        Uuid id = Uuid.randomUuid();
        CompletableFuture.allOf(streams.toArray(CompletableFuture[]::new)).thenCompose(v -> {
            Properties p = new Properties();
            p.setProperty("id", id.toString());
            p.setProperty("partitions", Integer.toString(partitions));
            for (int i = 0; i < partitions; i++) {
                p.setProperty("stream." + i, Long.toString(streams.get(i).join().streamId()));
                p.setProperty("epoch." + i, "0");
            }
            configs.forEach((k, val) -> p.setProperty("config." + k, val));
            return kv.compareAndSet(PREFIX + name, null, format(p));
        }).whenComplete((created, e) -> {
            if (e == null && !created) {
                e = new TopicExistsException("Topic '" + name + "' already exists.");
            }
            if (e != null) {
                for (CompletableFuture<Stream> s : streams) {
                    s.thenAccept(Stream::destroy);
                }
                creating.remove(name);
                mine.completeExceptionally(e);
                return;
            }
            List<PartitionLog> logs = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                logs.add(new PartitionLog(name, i, streams.get(i).join(), blocking));
            }
            Topic t = new Topic(name, id, List.copyOf(logs), Map.copyOf(configs));
            topics.put(name, t);
            creating.remove(name);
            mine.complete(t);
        });
        return mine;
    }

    /**
     * Grows a topic to {@code count} partitions: creates the new streams, then records them with a compare-and-set
     * of the topic's key (so two shells cannot both add partitions); on failure the new streams are destroyed.
     */
    synchronized CompletableFuture<Topic> addPartitions(String name, int count) {
        Topic t = topics.get(name);
        if (t == null) {
            return CompletableFuture.failedFuture(new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
        }
        int current = t.partitions().size();
        if (count <= current) {
            return CompletableFuture.failedFuture(new InvalidPartitionsException("Topic currently has " + current
                    + " partitions, which is higher than or equal to the requested " + count + "."));
        }
        List<Stream> created = new ArrayList<>();
        try {
            for (int i = current; i < count; i++) {
                created.add(storage.createStream(StreamOptions.builder()
                        .tags(Map.of("kafka.topic", name, "kafka.partition", Integer.toString(i))).build()).join());
            }
            byte[] before = kv.get(PREFIX + name).join().orElseThrow(
                    () -> new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
            Properties p = parse(before);
            if (Integer.parseInt(p.getProperty("partitions")) != current) {
                throw new InvalidPartitionsException("Topic '" + name + "' changed meanwhile; retry");
            }
            p.setProperty("partitions", Integer.toString(count));
            for (int i = current; i < count; i++) {
                p.setProperty("stream." + i, Long.toString(created.get(i - current).streamId()));
                p.setProperty("epoch." + i, "0");
            }
            if (!kv.compareAndSet(PREFIX + name, before, format(p)).join()) {
                throw new InvalidPartitionsException("Topic '" + name + "' changed meanwhile; retry");
            }
        } catch (RuntimeException e) {
            created.forEach(Stream::destroy);
            Throwable c = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
            return CompletableFuture.failedFuture(c);
        }
        List<PartitionLog> logs = new ArrayList<>(t.partitions());
        for (int i = current; i < count; i++) {
            logs.add(new PartitionLog(name, i, created.get(i - current), blocking));
        }
        Topic grown = new Topic(name, t.id(), List.copyOf(logs), t.configs());
        topics.put(name, grown);
        return CompletableFuture.completedFuture(grown);
    }

    /** Deletes a topic and destroys its streams. */
    CompletableFuture<Void> delete(String name) {
        Topic t = topics.remove(name);
        if (t == null) {
            return CompletableFuture.failedFuture(new UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
        }
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (PartitionLog log : t.partitions()) {
            all.add(log.stream().destroy());
        }
        all.add(kv.delete(PREFIX + name));
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
    }

    private static Map<String, String> configsOf(Properties p) {
        Map<String, String> configs = new TreeMap<>();
        for (String k : p.stringPropertyNames()) {
            if (k.startsWith("config.")) {
                configs.put(k.substring("config.".length()), p.getProperty(k));
            }
        }
        return Map.copyOf(configs);
    }

    private static Properties parse(byte[] bytes) {
        Properties p = new Properties();
        try {
            p.load(new StringReader(new String(bytes, StandardCharsets.UTF_8)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return p;
    }

    private static byte[] format(Properties p) {
        StringWriter w = new StringWriter();
        TreeMap<String, String> sorted = new TreeMap<>();
        p.stringPropertyNames().forEach(k -> sorted.put(k, p.getProperty(k)));
        Properties ordered = new Properties();
        ordered.putAll(sorted);
        try {
            ordered.store(w, null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // Drop the date comment so equal contents give equal bytes.
        String text = w.toString().replaceFirst("^#.*\\R", "");
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
