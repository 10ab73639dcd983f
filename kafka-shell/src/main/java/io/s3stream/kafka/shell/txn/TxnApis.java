package io.s3stream.kafka.shell.txn;

import io.s3stream.kafka.shell.acl.Authorization;
import io.s3stream.kafka.shell.log.PartitionLog;
import io.s3stream.kafka.shell.network.ApiFamily;
import io.s3stream.kafka.shell.topic.TopicRegistry;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddOffsetsToTxnResponseData;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.message.DescribeProducersRequestData;
import org.apache.kafka.common.message.DescribeProducersResponseData;
import org.apache.kafka.common.message.DescribeTransactionsResponseData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.EndTxnResponseData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListTransactionsRequestData;
import org.apache.kafka.common.message.ListTransactionsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AddOffsetsToTxnRequest;
import org.apache.kafka.common.requests.AddOffsetsToTxnResponse;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnResponse;
import org.apache.kafka.common.requests.DescribeProducersRequest;
import org.apache.kafka.common.requests.DescribeProducersResponse;
import org.apache.kafka.common.requests.DescribeTransactionsRequest;
import org.apache.kafka.common.requests.DescribeTransactionsResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.EndTxnResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ListTransactionsRequest;
import org.apache.kafka.common.requests.ListTransactionsResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.TransactionResult;
import org.apache.kafka.common.requests.WriteTxnMarkersRequest;
import org.apache.kafka.common.requests.WriteTxnMarkersResponse;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The transaction APIs: InitProducerId (idempotent and transactional), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn
 * and the admin APIs DescribeTransactions, ListTransactions and DescribeProducers, answered by the
 * {@link TransactionCoordinator}; and WriteTxnMarkers, by which a coordinator on another shell has this shell write
 * markers into the partitions it leads. TxnOffsetCommit goes to the group coordinator (GroupApis).
 *
 * <p>Versions stop before transaction protocol v2 (KIP-890 part 2: EndTxn v5, TxnOffsetCommit v5, implicit partition
 * adds by Produce): the shell does not advertise the {@code transaction.version} feature, so clients use v1.
 */
public final class TxnApis implements ApiFamily {
    private final Authorization auth;
    private final TransactionCoordinator coordinator;
    private final TopicRegistry topics;

    public TxnApis(TransactionCoordinator coordinator, TopicRegistry topics, Authorization auth) {
        this.coordinator = coordinator;
        this.topics = topics;
        this.auth = auth;
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.INIT_PRODUCER_ID, 0, 5, ApiKeys.ADD_PARTITIONS_TO_TXN, 0, 3,
                ApiKeys.ADD_OFFSETS_TO_TXN, 0, 4, ApiKeys.END_TXN, 0, 4, ApiKeys.WRITE_TXN_MARKERS, 0, 1,
                ApiKeys.DESCRIBE_TRANSACTIONS, 0, 0, ApiKeys.LIST_TRANSACTIONS, 0, 1,
                ApiKeys.DESCRIBE_PRODUCERS, 0, 0);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        return switch (ctx.header.apiKey()) {
            case INIT_PRODUCER_ID -> initProducerId((InitProducerIdRequest) request);
            case ADD_PARTITIONS_TO_TXN -> addPartitions((AddPartitionsToTxnRequest) request);
            case ADD_OFFSETS_TO_TXN -> addOffsets((AddOffsetsToTxnRequest) request);
            case END_TXN -> endTxn((EndTxnRequest) request);
            case WRITE_TXN_MARKERS -> writeMarkers((WriteTxnMarkersRequest) request);
            case DESCRIBE_TRANSACTIONS -> describeTransactions(ctx, (DescribeTransactionsRequest) request);
            case LIST_TRANSACTIONS -> listTransactions(ctx, (ListTransactionsRequest) request);
            case DESCRIBE_PRODUCERS -> describeProducers(ctx, (DescribeProducersRequest) request);
            default -> throw new IllegalArgumentException(ctx.header.apiKey() + " is not a transaction API");
        };
    }

    private CompletableFuture<AbstractResponse> initProducerId(InitProducerIdRequest request) {
        InitProducerIdRequestData d = request.data();
        if (d.transactionalId() == null) {
            if (d.producerId() >= 0 && d.producerEpoch() >= 0 && d.producerEpoch() < Short.MAX_VALUE - 1) {
                // KIP-360: an idempotent producer bumps its epoch to reset its sequences.
                return ApiFamily.done(new InitProducerIdResponse(new InitProducerIdResponseData()
                        .setProducerId(d.producerId()).setProducerEpoch((short) (d.producerEpoch() + 1))));
            }
            return coordinator.nextProducerId().thenApply(id -> new InitProducerIdResponse(new InitProducerIdResponseData()
                    .setProducerId(id).setProducerEpoch((short) 0)));
        }
        if (!coordinator.coordinates(d.transactionalId())) {
            return ApiFamily.done(initError(Errors.NOT_COORDINATOR));
        }
        return coordinator.initProducerId(d.transactionalId(), d.transactionTimeoutMs(), d.producerId(), d.producerEpoch())
                .thenApply(r -> r.error() != Errors.NONE ? initError(r.error())
                        : new InitProducerIdResponse(new InitProducerIdResponseData().setProducerId(r.producerId())
                        .setProducerEpoch(r.epoch())));
    }

    private static InitProducerIdResponse initError(Errors e) {
        return new InitProducerIdResponse(new InitProducerIdResponseData().setErrorCode(e.code()).setProducerId(-1)
                .setProducerEpoch((short) -1));
    }

    private CompletableFuture<AbstractResponse> addPartitions(AddPartitionsToTxnRequest request) {
        var d = request.data();
        List<TopicPartition> partitions = AddPartitionsToTxnRequest.getPartitions(d.v3AndBelowTopics());
        CompletableFuture<Map<TopicPartition, Errors>> result;
        if (!coordinator.coordinates(d.v3AndBelowTransactionalId())) {
            Map<TopicPartition, Errors> errors = new HashMap<>();
            partitions.forEach(tp -> errors.put(tp, Errors.NOT_COORDINATOR));
            result = CompletableFuture.completedFuture(errors);
        } else {
            result = coordinator.addPartitions(d.v3AndBelowTransactionalId(), d.v3AndBelowProducerId(),
                    d.v3AndBelowProducerEpoch(), partitions);
        }
        return result.thenApply(errors -> new AddPartitionsToTxnResponse(new AddPartitionsToTxnResponseData()
                .setResultsByTopicV3AndBelow(AddPartitionsToTxnResponse.resultForTransaction(
                        AddPartitionsToTxnResponse.V3_AND_BELOW_TXN_ID, errors).topicResults())));
    }

    private CompletableFuture<AbstractResponse> addOffsets(AddOffsetsToTxnRequest request) {
        AddOffsetsToTxnRequestData d = request.data();
        CompletableFuture<Errors> result = !coordinator.coordinates(d.transactionalId())
                ? CompletableFuture.completedFuture(Errors.NOT_COORDINATOR)
                : coordinator.addOffsets(d.transactionalId(), d.producerId(), d.producerEpoch(), d.groupId());
        return result.thenApply(e -> new AddOffsetsToTxnResponse(new AddOffsetsToTxnResponseData().setErrorCode(e.code())));
    }

    private CompletableFuture<AbstractResponse> endTxn(EndTxnRequest request) {
        EndTxnRequestData d = request.data();
        CompletableFuture<Errors> result = !coordinator.coordinates(d.transactionalId())
                ? CompletableFuture.completedFuture(Errors.NOT_COORDINATOR)
                : coordinator.endTxn(d.transactionalId(), d.producerId(), d.producerEpoch(), d.committed());
        return result.thenApply(e -> new EndTxnResponse(new EndTxnResponseData().setErrorCode(e.code())
                .setProducerId(-1).setProducerEpoch((short) -1)));
    }

    /** Markers from a transaction coordinator (on any shell) for partitions this shell leads. */
    private CompletableFuture<AbstractResponse> writeMarkers(WriteTxnMarkersRequest request) {
        Map<Long, Map<TopicPartition, CompletableFuture<Errors>>> pending = new HashMap<>();
        List<CompletableFuture<Errors>> all = new ArrayList<>();
        for (WriteTxnMarkersRequest.TxnMarkerEntry marker : request.markers()) {
            Map<TopicPartition, CompletableFuture<Errors>> byPartition =
                    pending.computeIfAbsent(marker.producerId(), id -> new HashMap<>());
            for (TopicPartition tp : marker.partitions()) {
                TopicRegistry.Topic t = topics.get(tp.topic());
                PartitionLog log = t == null ? null : t.partition(tp.partition());
                CompletableFuture<Errors> f = log == null
                        ? CompletableFuture.completedFuture(TopicRegistry.missing(t, tp.partition()))
                        : log.writeMarker(marker.producerId(), marker.producerEpoch(),
                        marker.transactionResult() == TransactionResult.COMMIT, marker.coordinatorEpoch());
                byPartition.put(tp, f);
                all.add(f);
            }
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(v -> {
            Map<Long, Map<TopicPartition, Errors>> errors = new HashMap<>();
            pending.forEach((pid, m) -> {
                Map<TopicPartition, Errors> e = new HashMap<>();
                m.forEach((tp, f) -> e.put(tp, f.join()));
                errors.put(pid, e);
            });
            return new WriteTxnMarkersResponse(errors);
        });
    }

    private CompletableFuture<AbstractResponse> describeTransactions(RequestContext ctx, DescribeTransactionsRequest request) {
        List<String> allowed = new ArrayList<>();
        DescribeTransactionsResponseData out = new DescribeTransactionsResponseData();
        for (String id : request.data().transactionalIds()) {
            if (auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, id)) {
                allowed.add(id);
            } else {
                out.transactionStates().add(new DescribeTransactionsResponseData.TransactionState()
                        .setTransactionalId(id).setErrorCode(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code()));
            }
        }
        return coordinator.describe(allowed).thenApply(list -> {
            for (TransactionCoordinator.Description d : list) {
                Map<String, List<Integer>> byTopic = new java.util.TreeMap<>();
                d.partitions().forEach(tp -> byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition()));
                // As Kafka: only the partitions of topics the principal may describe.
                byTopic.keySet().removeIf(t -> !auth.visible(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t));
                DescribeTransactionsResponseData.TopicDataCollection topicData = new DescribeTransactionsResponseData.TopicDataCollection();
                byTopic.forEach((topic, parts) -> topicData.add(new DescribeTransactionsResponseData.TopicData()
                        .setTopic(topic).setPartitions(parts)));
                out.transactionStates().add(new DescribeTransactionsResponseData.TransactionState()
                        .setTransactionalId(d.transactionalId()).setErrorCode(d.error().code())
                        .setTransactionState(d.state()).setTransactionTimeoutMs(d.timeoutMs())
                        .setTransactionStartTimeMs(d.startMs()).setProducerId(d.producerId())
                        .setProducerEpoch(d.epoch()).setTopics(topicData));
            }
            return new DescribeTransactionsResponse(out);
        });
    }

    private CompletableFuture<AbstractResponse> listTransactions(RequestContext ctx, ListTransactionsRequest request) {
        ListTransactionsRequestData d = request.data();
        long now = System.currentTimeMillis();
        return coordinator.list().thenApply(list -> {
            ListTransactionsResponseData out = new ListTransactionsResponseData();
            for (TransactionCoordinator.Description t : list) {
                if (!d.stateFilters().isEmpty() && !d.stateFilters().contains(t.state())) {
                    continue;
                }
                if (!d.producerIdFilters().isEmpty() && !d.producerIdFilters().contains(t.producerId())) {
                    continue;
                }
                if (d.durationFilter() >= 0 && (t.startMs() < 0 || now - t.startMs() < d.durationFilter())) {
                    continue;
                }
                if (!auth.visible(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactionalId())) {
                    continue; // as Kafka: only the transactions the principal may describe
                }
                out.transactionStates().add(new ListTransactionsResponseData.TransactionState()
                        .setTransactionalId(t.transactionalId()).setProducerId(t.producerId())
                        .setTransactionState(t.state()));
            }
            List<String> known = List.of("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                    "CompleteAbort", "Dead", "PrepareEpochFence");
            d.stateFilters().stream().filter(s -> !known.contains(s)).forEach(out.unknownStateFilters()::add);
            return new ListTransactionsResponse(out);
        });
    }

    private CompletableFuture<AbstractResponse> describeProducers(RequestContext ctx, DescribeProducersRequest request) {
        DescribeProducersResponseData out = new DescribeProducersResponseData();
        List<CompletableFuture<?>> all = new ArrayList<>();
        for (DescribeProducersRequestData.TopicRequest tr : request.data().topics()) {
            DescribeProducersResponseData.TopicResponse topic = new DescribeProducersResponseData.TopicResponse().setName(tr.name());
            out.topics().add(topic);
            TopicRegistry.Topic t = topics.get(tr.name());
            boolean allowed = auth.allowed(ctx, AclOperation.READ, ResourceType.TOPIC, tr.name());
            for (int p : tr.partitionIndexes()) {
                DescribeProducersResponseData.PartitionResponse pr = new DescribeProducersResponseData.PartitionResponse()
                        .setPartitionIndex(p);
                topic.partitions().add(pr);
                PartitionLog log = t == null ? null : t.partition(p);
                if (!allowed) {
                    pr.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                    continue;
                }
                if (log == null) {
                    pr.setErrorCode(TopicRegistry.missing(t, p).code());
                    continue;
                }
                all.add(log.producers().handle((states, e) -> {
                    if (e != null) {
                        pr.setErrorCode(Errors.KAFKA_STORAGE_ERROR.code()).setErrorMessage(String.valueOf(ApiFamily.cause(e)));
                        return null;
                    }
                    states.forEach(s -> pr.activeProducers().add(new DescribeProducersResponseData.ProducerState()
                            .setProducerId(s.producerId()).setProducerEpoch(s.epoch()).setLastSequence(s.lastSequence())
                            .setLastTimestamp(-1).setCoordinatorEpoch(-1).setCurrentTxnStartOffset(s.currentTxnStartOffset())));
                    return null;
                }));
            }
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .thenApply(v -> new DescribeProducersResponse(out));
    }
}
