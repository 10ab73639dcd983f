package io.s3stream.kafka.shell.acl;

import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What the request handlers ask before they act: whether the connection's principal may do an operation on a resource.
 * Without an authorizer ({@code authorizer.class.name} unset) everything is allowed, as in Kafka. The checks each API
 * makes, and the error it answers, are Kafka's (its KafkaApis); they are listed in kafka-shell/README.md "ACLs".
 */
public final class Authorization {
    /** The name of the one CLUSTER resource, as in Kafka. */
    public static final String CLUSTER_NAME = "kafka-cluster";
    private static final Authorization NONE = new Authorization(null);
    private static final List<AclOperation> TOPIC_OPERATIONS = List.of(AclOperation.READ, AclOperation.WRITE,
            AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS);
    private static final List<AclOperation> GROUP_OPERATIONS = List.of(AclOperation.READ, AclOperation.DESCRIBE,
            AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS);
    private static final List<AclOperation> CLUSTER_OPERATIONS = List.of(AclOperation.CREATE,
            AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE);

    private final Authorizer authorizer;

    private Authorization(Authorizer authorizer) {
        this.authorizer = authorizer;
    }

    /** No authorizer: every request is allowed. */
    public static Authorization none() {
        return NONE;
    }

    public static Authorization by(Authorizer authorizer) {
        return authorizer == null ? NONE : new Authorization(authorizer);
    }

    /** The authorizer, or null when none is configured (the ACL APIs then answer SECURITY_DISABLED). */
    public Authorizer authorizer() {
        return authorizer;
    }

    /** Whether {@code op} on the resource is allowed; a denial is logged. */
    public boolean allowed(AuthorizableRequestContext ctx, AclOperation op, ResourceType type, String name) {
        return check(ctx, op, type, name, true);
    }

    /** As {@link #allowed}, without logging a denial: for filtering what a listing shows (Kafka's logIfDenied=false). */
    public boolean visible(AuthorizableRequestContext ctx, AclOperation op, ResourceType type, String name) {
        return check(ctx, op, type, name, false);
    }

    public boolean cluster(AuthorizableRequestContext ctx, AclOperation op) {
        return check(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME, true);
    }

    /**
     * Whether {@code op} is allowed on some resource of {@code type} (Kafka's authorizeByResourceType: what lets an
     * idempotent producer that may write to any topic have a producer id).
     */
    public boolean anyOfType(AuthorizableRequestContext ctx, AclOperation op, ResourceType type) {
        return authorizer == null
                || authorizer.authorizeByResourceType(ctx, op, type) == AuthorizationResult.ALLOWED;
    }

    /**
     * The operations the principal may do on a resource, as the bit field of operation codes that Metadata,
     * DescribeCluster and DescribeGroups answer when a client asks for authorized operations.
     */
    public int operations(AuthorizableRequestContext ctx, ResourceType type, String name) {
        List<AclOperation> supported = switch (type) {
            case TOPIC -> TOPIC_OPERATIONS;
            case GROUP -> GROUP_OPERATIONS;
            case CLUSTER -> CLUSTER_OPERATIONS;
            default -> List.of();
        };
        Set<Byte> codes = new HashSet<>();
        for (AclOperation op : supported) {
            if (check(ctx, op, type, name, false)) {
                codes.add(op.code());
            }
        }
        return Utils.to32BitField(codes);
    }

    private boolean check(AuthorizableRequestContext ctx, AclOperation op, ResourceType type, String name,
                          boolean logIfDenied) {
        if (authorizer == null) {
            return true;
        }
        Action action = new Action(op, new ResourcePattern(type, name, PatternType.LITERAL), 1, false, logIfDenied);
        return authorizer.authorize(ctx, List.of(action)).getFirst() == AuthorizationResult.ALLOWED;
    }
}
