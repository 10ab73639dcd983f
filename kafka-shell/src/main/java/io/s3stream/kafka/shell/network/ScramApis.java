package io.s3stream.kafka.shell.network;

import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.AlterUserScramCredentialsResponseData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterUserScramCredentialsRequest;
import org.apache.kafka.common.requests.AlterUserScramCredentialsResponse;
import org.apache.kafka.common.requests.DescribeUserScramCredentialsRequest;
import org.apache.kafka.common.requests.DescribeUserScramCredentialsResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * DescribeUserScramCredentials and AlterUserScramCredentials ({@code kafka-configs.sh --entity-type users
 * --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=…]'}) over {@link ScramCredentials}, with Kafka's
 * checks: a known mechanism, iterations within the mechanism's bounds (4,096 to 16,384), one change per user and
 * mechanism per request, a deletion of a credential that exists. Describe shows mechanisms and iterations only.
 */
public final class ScramApis implements ApiFamily {
    private final ScramCredentials credentials;
    private final Executor blocking;

    public ScramApis(ScramCredentials credentials, Executor blocking) {
        this.credentials = credentials;
        this.blocking = blocking;
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0,
                ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, 0, 0);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        return switch (ctx.header.apiKey()) {
            case DESCRIBE_USER_SCRAM_CREDENTIALS -> ApiFamily.done(describe((DescribeUserScramCredentialsRequest) request));
            case ALTER_USER_SCRAM_CREDENTIALS -> CompletableFuture.supplyAsync(
                    () -> alter(((AlterUserScramCredentialsRequest) request).data()), blocking);
            default -> throw new IllegalArgumentException(ctx.header.apiKey() + " is not a SCRAM API");
        };
    }

    static ScramMechanism mechanism(byte type) {
        return switch (type) {
            case 1 -> ScramMechanism.SCRAM_SHA_256;
            case 2 -> ScramMechanism.SCRAM_SHA_512;
            default -> null;
        };
    }

    private static byte type(ScramMechanism m) {
        return (byte) (m == ScramMechanism.SCRAM_SHA_256 ? 1 : 2);
    }

    private AbstractResponse describe(DescribeUserScramCredentialsRequest request) {
        Map<String, Map<ScramMechanism, Integer>> all = credentials.describe();
        List<String> users = request.data().users() == null || request.data().users().isEmpty()
                ? new ArrayList<>(all.keySet()) // null or empty: every user, as Kafka
                : request.data().users().stream().map(u -> u.name()).toList();
        var out = new DescribeUserScramCredentialsResponseData();
        for (String user : users) {
            var r = new DescribeUserScramCredentialsResponseData.DescribeUserScramCredentialsResult().setUser(user);
            Map<ScramMechanism, Integer> infos = all.get(user);
            if (infos == null) {
                r.setErrorCode(Errors.RESOURCE_NOT_FOUND.code()).setErrorMessage("Attempt to describe a user "
                        + "credential that does not exist: " + user);
            } else {
                infos.forEach((m, iterations) -> r.credentialInfos().add(
                        new DescribeUserScramCredentialsResponseData.CredentialInfo().setMechanism(type(m))
                                .setIterations(iterations)));
            }
            out.results().add(r);
        }
        return new DescribeUserScramCredentialsResponse(out);
    }

    private AbstractResponse alter(AlterUserScramCredentialsRequestData request) {
        var out = new AlterUserScramCredentialsResponseData();
        Set<String> seen = new HashSet<>();
        Set<String> duplicated = new HashSet<>();
        List<String> keys = new ArrayList<>();
        request.deletions().forEach(d -> keys.add(d.name() + "/" + d.mechanism()));
        request.upsertions().forEach(u -> keys.add(u.name() + "/" + u.mechanism()));
        for (String k : keys) {
            if (!seen.add(k)) {
                duplicated.add(k);
            }
        }
        for (var d : request.deletions()) {
            out.results().add(result(d.name(), () -> {
                ScramMechanism m = mechanism(d.mechanism());
                check(m, d.name() + "/" + d.mechanism(), duplicated);
                if (credentials.get(m, d.name()) == null) {
                    throw new Failure(Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not "
                            + "exist: " + d.name() + " " + m.mechanismName());
                }
                credentials.delete(m, d.name()).join();
            }));
        }
        for (var u : request.upsertions()) {
            out.results().add(result(u.name(), () -> {
                ScramMechanism m = mechanism(u.mechanism());
                check(m, u.name() + "/" + u.mechanism(), duplicated);
                if (u.name().isEmpty()) {
                    throw new Failure(Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty");
                }
                if (u.iterations() < m.minIterations() || u.iterations() > m.maxIterations()) {
                    throw new Failure(Errors.UNACCEPTABLE_CREDENTIAL, "Iterations " + u.iterations() + " must be "
                            + "between " + m.minIterations() + " and " + m.maxIterations() + " for " + m.mechanismName());
                }
                if (u.salt().length == 0 || u.saltedPassword().length == 0) {
                    throw new Failure(Errors.UNACCEPTABLE_CREDENTIAL, "salt and salted password are required");
                }
                credentials.upsert(m, u.name(), u.salt(), u.saltedPassword(), u.iterations()).join();
            }));
        }
        return new AlterUserScramCredentialsResponse(out);
    }

    private static void check(ScramMechanism m, String key, Set<String> duplicated) {
        if (m == null) {
            throw new Failure(Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism");
        }
        if (duplicated.contains(key)) {
            throw new Failure(Errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request");
        }
    }

    /** A refusal with Kafka's error code. */
    private static final class Failure extends RuntimeException {
        final Errors error;

        Failure(Errors error, String message) {
            super(message, null, false, false);
            this.error = error;
        }
    }

    private static AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult result(String user,
                                                                                               Runnable change) {
        var r = new AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult().setUser(user);
        try {
            change.run();
            r.setErrorCode(Errors.NONE.code());
        } catch (Failure f) {
            r.setErrorCode(f.error.code()).setErrorMessage(f.getMessage());
        } catch (RuntimeException e) {
            Throwable cause = ApiFamily.cause(e);
            r.setErrorCode(Errors.forException(cause).code()).setErrorMessage(cause.getMessage());
        }
        return r;
    }
}
