package io.s3stream.kafka.shell.acl;

import io.s3stream.kafka.shell.network.ApiDispatcher;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AddOffsetsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnResponse;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.HeartbeatRequest;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.LeaveGroupRequest;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.OffsetDeleteRequest;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.SyncGroupRequest;
import org.apache.kafka.common.requests.TxnOffsetCommitRequest;
import org.apache.kafka.common.resource.ResourceType;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The authorization checks that decide a whole request, made before its handler runs: the group a group request is
 * for, the transactional id of a transaction request, the CLUSTER resource of an admin request. A denied request gets
 * the error response Kafka gives (its {@code getErrorResponse} with GROUP_AUTHORIZATION_FAILED,
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED or CLUSTER_AUTHORIZATION_FAILED). Checks on the topics and groups inside a
 * request (a produce to several topics, a listing) are the handlers' own, per resource.
 */
public final class RequestGuard implements ApiDispatcher.Guard {
    private final Authorization auth;

    public RequestGuard(Authorization auth) {
        this.auth = auth;
    }

    /** The response that refuses {@code request}, or null when its handler may answer it. */
    @Override
    public AbstractResponse denied(RequestContext ctx, AbstractRequest request) {
        if (auth.authorizer() == null) {
            return null;
        }
        return switch (ctx.header.apiKey()) {
            case CONSUMER_GROUP_HEARTBEAT -> consumerGroupHeartbeat(ctx, (ConsumerGroupHeartbeatRequest) request);
            case ADD_PARTITIONS_TO_TXN -> addPartitions(ctx, (AddPartitionsToTxnRequest) request);
            default -> {
                Errors error = error(ctx, request);
                yield error == Errors.NONE ? null : request.getErrorResponse(0, error.exception());
            }
        };
    }

    /** The error that refuses a request decided by one resource, or NONE. */
    private Errors error(RequestContext ctx, AbstractRequest request) {
        return switch (ctx.header.apiKey()) {
            case JOIN_GROUP -> group(ctx, AclOperation.READ, ((JoinGroupRequest) request).data().groupId());
            case SYNC_GROUP -> group(ctx, AclOperation.READ, ((SyncGroupRequest) request).data().groupId());
            case HEARTBEAT -> group(ctx, AclOperation.READ, ((HeartbeatRequest) request).data().groupId());
            case LEAVE_GROUP -> group(ctx, AclOperation.READ, ((LeaveGroupRequest) request).data().groupId());
            case OFFSET_COMMIT -> group(ctx, AclOperation.READ, ((OffsetCommitRequest) request).data().groupId());
            case TXN_OFFSET_COMMIT -> group(ctx, AclOperation.READ, ((TxnOffsetCommitRequest) request).data().groupId());
            case OFFSET_DELETE -> group(ctx, AclOperation.DELETE, ((OffsetDeleteRequest) request).data().groupId());
            case PRODUCE -> {
                String id = ((ProduceRequest) request).transactionalId();
                yield id == null ? Errors.NONE : transactionalId(ctx, id);
            }
            case INIT_PRODUCER_ID -> {
                String id = ((InitProducerIdRequest) request).data().transactionalId();
                if (id != null) {
                    yield transactionalId(ctx, id);
                }
                // An idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679).
                yield auth.visible(ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, Authorization.CLUSTER_NAME)
                        || auth.anyOfType(ctx, AclOperation.WRITE, ResourceType.TOPIC)
                        ? Errors.NONE : Errors.CLUSTER_AUTHORIZATION_FAILED;
            }
            case ADD_OFFSETS_TO_TXN -> {
                var d = ((AddOffsetsToTxnRequest) request).data();
                Errors e = transactionalId(ctx, d.transactionalId());
                yield e != Errors.NONE ? e : group(ctx, AclOperation.READ, d.groupId());
            }
            case END_TXN -> transactionalId(ctx, ((EndTxnRequest) request).data().transactionalId());
            case WRITE_TXN_MARKERS -> cluster(ctx, AclOperation.CLUSTER_ACTION);
            case CREATE_ACLS, DELETE_ACLS, ALTER_USER_SCRAM_CREDENTIALS, ALTER_PARTITION_REASSIGNMENTS ->
                    cluster(ctx, AclOperation.ALTER);
            case DESCRIBE_ACLS, DESCRIBE_USER_SCRAM_CREDENTIALS, LIST_PARTITION_REASSIGNMENTS, DESCRIBE_LOG_DIRS ->
                    cluster(ctx, AclOperation.DESCRIBE);
            case ALTER_CLIENT_QUOTAS -> cluster(ctx, AclOperation.ALTER_CONFIGS);
            case DESCRIBE_CLIENT_QUOTAS -> cluster(ctx, AclOperation.DESCRIBE_CONFIGS);
            default -> Errors.NONE;
        };
    }

    /**
     * READ on the group, and DESCRIBE on every topic subscribed by name: Kafka answers TOPIC_AUTHORIZATION_FAILED
     * naming those the member may not see, so it knows what to drop.
     */
    private AbstractResponse consumerGroupHeartbeat(RequestContext ctx, ConsumerGroupHeartbeatRequest request) {
        var d = request.data();
        if (group(ctx, AclOperation.READ, d.groupId()) != Errors.NONE) {
            return request.getErrorResponse(0, Errors.GROUP_AUTHORIZATION_FAILED.exception());
        }
        if (d.subscribedTopicNames() != null) {
            TreeSet<String> hidden = new TreeSet<>();
            d.subscribedTopicNames().forEach(t -> {
                if (!auth.allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t)) {
                    hidden.add(t);
                }
            });
            if (!hidden.isEmpty()) {
                return new ConsumerGroupHeartbeatResponse(new ConsumerGroupHeartbeatResponseData()
                        .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())
                        .setErrorMessage("Not authorized to describe topics " + hidden));
            }
        }
        return null;
    }

    private Errors group(RequestContext ctx, AclOperation op, String groupId) {
        return auth.allowed(ctx, op, ResourceType.GROUP, groupId) ? Errors.NONE : Errors.GROUP_AUTHORIZATION_FAILED;
    }

    private Errors transactionalId(RequestContext ctx, String id) {
        return auth.allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, id)
                ? Errors.NONE : Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    }

    private Errors cluster(RequestContext ctx, AclOperation op) {
        return auth.cluster(ctx, op) ? Errors.NONE : Errors.CLUSTER_AUTHORIZATION_FAILED;
    }

    /**
     * AddPartitionsToTxn: WRITE on the transactional id; with a topic the producer may not write nothing is added,
     * those partitions answer TOPIC_AUTHORIZATION_FAILED and the others OPERATION_NOT_ATTEMPTED, as in Kafka.
     */
    private AbstractResponse addPartitions(RequestContext ctx, AddPartitionsToTxnRequest r) {
        if (transactionalId(ctx, r.data().v3AndBelowTransactionalId()) != Errors.NONE) {
            return r.getErrorResponse(0, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.exception());
        }
        List<TopicPartition> partitions = AddPartitionsToTxnRequest.getPartitions(r.data().v3AndBelowTopics());
        Map<String, Boolean> allowed = new HashMap<>();
        partitions.forEach(tp -> allowed.computeIfAbsent(tp.topic(),
                t -> auth.allowed(ctx, AclOperation.WRITE, ResourceType.TOPIC, t)));
        if (!allowed.containsValue(false)) {
            return null;
        }
        Map<TopicPartition, Errors> errors = new HashMap<>();
        partitions.forEach(tp -> errors.put(tp, allowed.get(tp.topic())
                ? Errors.OPERATION_NOT_ATTEMPTED : Errors.TOPIC_AUTHORIZATION_FAILED));
        return new AddPartitionsToTxnResponse(new AddPartitionsToTxnResponseData().setResultsByTopicV3AndBelow(
                AddPartitionsToTxnResponse.resultForTransaction(AddPartitionsToTxnResponse.V3_AND_BELOW_TXN_ID,
                        errors).topicResults()));
    }
}
