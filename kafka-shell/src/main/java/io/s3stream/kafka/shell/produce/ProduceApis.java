package io.s3stream.kafka.shell.produce;

import io.s3stream.kafka.shell.acl.Authorization;
import io.s3stream.kafka.shell.config.ShellConfig;
import io.s3stream.kafka.shell.log.KafkaKeyCompaction;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.log.ProduceValidator;
import io.s3stream.kafka.shell.metrics.ShellMetrics;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.topic.TopicConfigs;
import io.s3stream.kafka.shell.topic.TopicRegistry;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Produce: validates each partition's batch as Kafka does ({@link ProduceValidator}) and appends it to the partition's
 * log (transactional batches open their producer's transaction there; the coordinator's markers end it).
 */
public final class ProduceApis implements ApiFamily {
    private final Authorization auth;
    private final ShellConfig config;
    private final TopicRegistry topics;
    private final ShellMetrics metrics;
    /**
     * The produce settings of each set of topic overrides seen (a topic's configs are immutable maps, replaced when
     * altered), so that a produce request no longer builds the effective config (a sorted map of 15 entries) and
     * parses four of its values. Two threads may both fill an entry; they fill it alike. Bounded: cleared when it
     * holds {@value #MAX_SETTINGS} sets.
     */
    private final Map<Map<String, String>, ProduceSettings> settings = new ConcurrentHashMap<>();
    private static final int MAX_SETTINGS = 1_024;

    /** What the validator and the append need of a topic's effective config. */
    private record ProduceSettings(int maxMessageBytes, boolean logAppendTime, long timestampAfterMaxMs,
                                   long timestampBeforeMaxMs, boolean compacts) {
        static ProduceSettings of(Map<String, String> cfg) {
            return new ProduceSettings(Integer.parseInt(cfg.get("max.message.bytes")),
                    "LogAppendTime".equals(cfg.get("message.timestamp.type")),
                    Long.parseLong(cfg.get("message.timestamp.after.max.ms")),
                    Long.parseLong(cfg.get("message.timestamp.before.max.ms")), KafkaKeyCompaction.compacts(cfg));
        }
    }

    public ProduceApis(ShellConfig config, TopicRegistry topics, ShellMetrics metrics, Authorization auth) {
        this.config = config;
        this.topics = topics;
        this.metrics = metrics;
        this.auth = auth;
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.PRODUCE, 3, 12);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        return switch (ctx.header.apiKey()) {
            case PRODUCE -> produce(ctx, (ProduceRequest) request);
            default -> throw new IllegalArgumentException(ctx.header.apiKey() + " is not a produce API");
        };
    }

    private CompletableFuture<AbstractResponse> produce(RequestContext ctx, ProduceRequest request) {
        ProduceRequestData data = request.data();
        Map<String, List<CompletableFuture<ProduceResponseData.PartitionProduceResponse>>> results = new LinkedHashMap<>();
        for (ProduceRequestData.TopicProduceData td : data.topicData()) {
            TopicRegistry.Topic t = topics.get(td.name());
            List<CompletableFuture<ProduceResponseData.PartitionProduceResponse>> list =
                    results.computeIfAbsent(td.name(), n -> new ArrayList<>());
            if (!auth.allowed(ctx, AclOperation.WRITE, ResourceType.TOPIC, td.name())) {
                td.partitionData().forEach(pd -> list.add(CompletableFuture.completedFuture(
                        partitionError(pd.index(), Errors.TOPIC_AUTHORIZATION_FAILED, null))));
                continue;
            }
            for (ProduceRequestData.PartitionProduceData pd : td.partitionData()) {
                PartitionLog log = t == null ? null : t.partition(pd.index());
                if (log == null) {
                    list.add(CompletableFuture.completedFuture(partitionError(pd.index(), TopicRegistry.missing(t, pd.index()), null)));
                    continue;
                }
                list.add(appendPartition(t, log, pd));
            }
        }
        List<CompletableFuture<?>> all = new ArrayList<>();
        results.values().forEach(all::addAll);
        if (data.acks() == 0) {
            // No response, but the request (whose frame holds the batches) is done only once they are appended.
            return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(v -> null);
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(v -> {
            ProduceResponseData.TopicProduceResponseCollection responses = new ProduceResponseData.TopicProduceResponseCollection();
            results.forEach((name, list) -> {
                List<ProduceResponseData.PartitionProduceResponse> parts = new ArrayList<>();
                list.forEach(f -> parts.add(f.join()));
                responses.add(new ProduceResponseData.TopicProduceResponse().setName(name).setPartitionResponses(parts));
            });
            return new ProduceResponse(new ProduceResponseData().setResponses(responses));
        });
    }

    private static ProduceResponseData.PartitionProduceResponse partitionError(int index, Errors error, String message) {
        return new ProduceResponseData.PartitionProduceResponse().setIndex(index).setErrorCode(error.code())
                .setBaseOffset(-1).setLogAppendTimeMs(-1).setLogStartOffset(-1).setErrorMessage(message);
    }

    private ProduceSettings settingsOf(TopicRegistry.Topic topic) {
        ProduceSettings s = settings.get(topic.configs());
        if (s == null) {
            s = ProduceSettings.of(TopicConfigs.effective(config, topic.configs()));
            if (settings.size() >= MAX_SETTINGS) {
                settings.clear();
            }
            settings.put(topic.configs(), s);
        }
        return s;
    }

    /** Validates the partition's records as Kafka does, then appends the single batch. */
    private CompletableFuture<ProduceResponseData.PartitionProduceResponse> appendPartition(
            TopicRegistry.Topic topic, PartitionLog log, ProduceRequestData.PartitionProduceData pd) {
        int index = pd.index();
        if (!(pd.records() instanceof MemoryRecords records) || records.sizeInBytes() == 0) {
            return CompletableFuture.completedFuture(partitionError(index, Errors.CORRUPT_MESSAGE, "no records"));
        }
        ProduceSettings s = settingsOf(topic);
        boolean logAppendTime = s.logAppendTime();
        ProduceValidator.Result check = ProduceValidator.validate(records, s.maxMessageBytes(), logAppendTime,
                s.timestampAfterMaxMs(), s.timestampBeforeMaxMs(), System.currentTimeMillis(), s.compacts());
        if (!check.valid()) {
            return CompletableFuture.completedFuture(partitionError(index, check.error(), check.message()));
        }
        // The batch is a view of the request frame, owned by this request until it is answered; the append rewrites
        // its base offset in place and the library copies it into the log cache.
        int bytes = records.sizeInBytes();
        var batch = records.batches().iterator().next(); // exactly one, validated
        int count = (int) (batch.lastOffset() - batch.baseOffset()) + 1;
        return log.append(records.buffer().duplicate(), logAppendTime).thenApply(o -> {
            if (o.error() == Errors.NONE) {
                metrics.appended(topic.name(), bytes, count);
            }
            return new ProduceResponseData.PartitionProduceResponse().setIndex(index).setErrorCode(o.error().code())
                    .setBaseOffset(o.baseOffset()).setLogAppendTimeMs(o.logAppendTimeMs())
                    .setLogStartOffset(log.logStartOffset());
        });
    }
}
