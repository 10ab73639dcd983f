package io.s3stream.kafka.shell.quota;

import io.s3stream.kafka.shell.network.ApiFamily;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.AlterClientQuotasResponseData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterClientQuotasRequest;
import org.apache.kafka.common.requests.AlterClientQuotasResponse;
import org.apache.kafka.common.requests.DescribeClientQuotasRequest;
import org.apache.kafka.common.requests.DescribeClientQuotasResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * DescribeClientQuotas and AlterClientQuotas ({@code kafka-configs.sh --entity-type users|clients}) over
 * {@link ClientQuotas}: entities of type {@code user} and {@code client-id}, named or default (a null name);
 * {@code ip} entities (connection-rate quotas) are refused.
 */
public final class QuotaApis implements ApiFamily {
    private static final String USER = "user";
    private static final String CLIENT_ID = "client-id";
    private final ClientQuotas quotas;
    private final Executor blocking;

    public QuotaApis(ClientQuotas quotas, Executor blocking) {
        this.quotas = quotas;
        this.blocking = blocking;
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.DESCRIBE_CLIENT_QUOTAS, 0, 1, ApiKeys.ALTER_CLIENT_QUOTAS, 0, 1);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        return switch (ctx.header.apiKey()) {
            case DESCRIBE_CLIENT_QUOTAS -> ApiFamily.done(describe(((DescribeClientQuotasRequest) request).data()));
            case ALTER_CLIENT_QUOTAS -> CompletableFuture.supplyAsync(
                    () -> alter(((AlterClientQuotasRequest) request).data()), blocking);
            default -> throw new IllegalArgumentException(ctx.header.apiKey() + " is not a quota API");
        };
    }

    private AbstractResponse describe(DescribeClientQuotasRequestData request) {
        var out = new DescribeClientQuotasResponseData();
        for (var c : request.components()) {
            if (!c.entityType().equals(USER) && !c.entityType().equals(CLIENT_ID)) {
                return new DescribeClientQuotasResponse(out.setErrorCode(Errors.INVALID_REQUEST.code())
                        .setErrorMessage("unsupported quota entity type " + c.entityType() + " (user and client-id are)")
                        .setEntries(null));
            }
        }
        List<DescribeClientQuotasResponseData.EntryData> entries = new ArrayList<>();
        quotas.sorted().values().forEach(e -> {
            ClientQuotas.Entity entity = e.getKey();
            if (matches(entity, request)) {
                var entry = new DescribeClientQuotasResponseData.EntryData();
                if (entity.user() != null) {
                    entry.entity().add(new DescribeClientQuotasResponseData.EntityData().setEntityType(USER)
                            .setEntityName(entity.user().isEmpty() ? null : entity.user()));
                }
                if (entity.clientId() != null) {
                    entry.entity().add(new DescribeClientQuotasResponseData.EntityData().setEntityType(CLIENT_ID)
                            .setEntityName(entity.clientId().isEmpty() ? null : entity.clientId()));
                }
                e.getValue().forEach((k, v) -> entry.values().add(new DescribeClientQuotasResponseData.ValueData()
                        .setKey(k).setValue(v)));
                entries.add(entry);
            }
        });
        return new DescribeClientQuotasResponse(out.setEntries(entries));
    }

    /** Kafka's filter: each component constrains its type (EXACT name, DEFAULT, SPECIFIED); strict: no other types. */
    private static boolean matches(ClientQuotas.Entity entity, DescribeClientQuotasRequestData request) {
        boolean userFiltered = false;
        boolean clientFiltered = false;
        for (var c : request.components()) {
            String part = c.entityType().equals(USER) ? entity.user() : entity.clientId();
            if (c.entityType().equals(USER)) {
                userFiltered = true;
            } else {
                clientFiltered = true;
            }
            boolean ok = switch (c.matchType()) {
                case 0 -> part != null && !part.isEmpty() && part.equals(c.match()); // EXACT
                case 1 -> part != null && part.isEmpty(); // DEFAULT
                case 2 -> part != null; // SPECIFIED: any name or the default
                default -> throw new InvalidRequestException("unknown match type " + c.matchType());
            };
            if (!ok) {
                return false;
            }
        }
        if (request.strict()) {
            return (entity.user() == null || userFiltered) && (entity.clientId() == null || clientFiltered);
        }
        return true;
    }

    private AbstractResponse alter(AlterClientQuotasRequestData request) {
        var out = new AlterClientQuotasResponseData();
        for (var e : request.entries()) {
            var result = new AlterClientQuotasResponseData.EntryData();
            e.entity().forEach(x -> result.entity().add(new AlterClientQuotasResponseData.EntityData()
                    .setEntityType(x.entityType()).setEntityName(x.entityName())));
            out.entries().add(result);
            try {
                String user = null;
                String clientId = null;
                for (var x : e.entity()) {
                    String name = x.entityName() == null ? "" : x.entityName();
                    switch (x.entityType()) {
                        case USER -> user = name;
                        case CLIENT_ID -> clientId = name;
                        default -> throw new InvalidRequestException("unsupported quota entity type "
                                + x.entityType() + " (user and client-id are; ip connection-rate quotas are not)");
                    }
                }
                if (user == null && clientId == null) {
                    throw new InvalidRequestException("a quota entity needs a user or a client-id");
                }
                Map<String, Double> changes = new LinkedHashMap<>();
                for (var op : e.ops()) {
                    changes.put(op.key(), op.remove() ? null : op.value());
                }
                quotas.alter(new ClientQuotas.Entity(user, clientId), changes, request.validateOnly()).join();
            } catch (RuntimeException ex) {
                Throwable cause = ApiFamily.cause(ex);
                result.setErrorCode(Errors.forException(cause).code()).setErrorMessage(cause.getMessage());
            }
        }
        return new AlterClientQuotasResponse(out);
    }
}
