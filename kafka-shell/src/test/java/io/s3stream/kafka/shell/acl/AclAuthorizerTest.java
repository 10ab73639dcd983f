package io.s3stream.kafka.shell.acl;

import io.s3stream.InvalidConfigException;
import io.s3stream.KeyValues;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The decisions of {@link AclAuthorizer} against Kafka's rules (literal, wildcard and prefixed patterns, DENY over
 * ALLOW, implied DESCRIBE, principal and host wildcards, super users, allow.everyone.if.no.acl.found), its validation
 * of new ACLs, and its store: two authorizers on one key-value space (two shells) see each other's changes.
 */
class AclAuthorizerTest {
    private final KeyValues kv = new MapKeyValues();

    private AclAuthorizer authorizer(Map<String, String> settings) {
        Map<String, String> all = new java.util.HashMap<>(settings);
        all.put(AclAuthorizer.CLASS_NAME_SETTING, "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        AclAuthorizer a = AclAuthorizer.fromConfig(all);
        a.attach(kv);
        return a;
    }

    private static AclBinding acl(ResourceType type, String name, PatternType pattern, String principal, String host,
                                  AclOperation op, AclPermissionType permission) {
        return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry(principal, host, op, permission));
    }

    private static AclBinding allow(ResourceType type, String name, PatternType pattern, String principal, AclOperation op) {
        return acl(type, name, pattern, principal, "*", op, AclPermissionType.ALLOW);
    }

    private static void create(AclAuthorizer a, AclBinding... bindings) {
        for (var f : a.createAcls(null, List.of(bindings))) {
            assertThat(f.toCompletableFuture().join().exception()).isEmpty();
        }
    }

    private static boolean allowed(AclAuthorizer a, String user, String host, AclOperation op, ResourceType type,
                                   String name) {
        return Authorization.by(a).allowed(context(user, host), op, type, name);
    }

    private static boolean allowed(AclAuthorizer a, String user, AclOperation op, ResourceType type, String name) {
        return allowed(a, user, "10.0.0.1", op, type, name);
    }

    @Test
    void literalWildcardAndPrefixedPatternsMatchAsInKafka() {
        AclAuthorizer a = authorizer(Map.of());
        create(a, allow(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", AclOperation.READ),
                allow(ResourceType.TOPIC, "logs-", PatternType.PREFIXED, "User:bob", AclOperation.READ),
                allow(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:carol", AclOperation.WRITE));
        assertThat(allowed(a, "alice", AclOperation.READ, ResourceType.TOPIC, "orders")).isTrue();
        assertThat(allowed(a, "alice", AclOperation.READ, ResourceType.TOPIC, "orders2")).isFalse();
        assertThat(allowed(a, "alice", AclOperation.WRITE, ResourceType.TOPIC, "orders")).isFalse();
        assertThat(allowed(a, "bob", AclOperation.READ, ResourceType.TOPIC, "logs-app")).isTrue();
        assertThat(allowed(a, "bob", AclOperation.READ, ResourceType.TOPIC, "logs-")).isTrue();
        assertThat(allowed(a, "bob", AclOperation.READ, ResourceType.TOPIC, "logs")).isFalse();
        assertThat(allowed(a, "carol", AclOperation.WRITE, ResourceType.TOPIC, "anything")).isTrue();
        // A topic ACL says nothing about a group of the same name.
        assertThat(allowed(a, "alice", AclOperation.READ, ResourceType.GROUP, "orders")).isFalse();
    }

    @Test
    void denyOverridesAllowAndAllowImpliesDescribe() {
        AclAuthorizer a = authorizer(Map.of());
        create(a, allow(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:alice", AclOperation.ALL),
                acl(ResourceType.TOPIC, "secret", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                        AclPermissionType.DENY),
                allow(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:bob", AclOperation.WRITE),
                allow(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:bob", AclOperation.ALTER_CONFIGS),
                acl(ResourceType.TOPIC, "p-", PatternType.PREFIXED, "User:*", "*", AclOperation.ALL,
                        AclPermissionType.DENY));
        assertThat(allowed(a, "alice", AclOperation.READ, ResourceType.TOPIC, "public")).isTrue();
        assertThat(allowed(a, "alice", AclOperation.READ, ResourceType.TOPIC, "secret")).isFalse();
        // DENY READ denies READ only: describing the topic is still allowed by ALLOW ALL.
        assertThat(allowed(a, "alice", AclOperation.DESCRIBE, ResourceType.TOPIC, "secret")).isTrue();
        // DENY ALL on a prefix, for every user, beats ALLOW ALL on *.
        assertThat(allowed(a, "alice", AclOperation.WRITE, ResourceType.TOPIC, "p-1")).isFalse();
        assertThat(allowed(a, "bob", AclOperation.DESCRIBE, ResourceType.TOPIC, "t")).isTrue(); // implied by WRITE
        assertThat(allowed(a, "bob", AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, "t")).isTrue();
        assertThat(allowed(a, "bob", AclOperation.READ, ResourceType.TOPIC, "t")).isFalse();
    }

    @Test
    void principalAndHostMustMatchUnlessWildcards() {
        AclAuthorizer a = authorizer(Map.of());
        create(a, acl(ResourceType.GROUP, "g", PatternType.LITERAL, "User:alice", "10.0.0.1", AclOperation.READ,
                        AclPermissionType.ALLOW),
                acl(ResourceType.GROUP, "h", PatternType.LITERAL, "User:*", "*", AclOperation.READ,
                        AclPermissionType.ALLOW));
        assertThat(allowed(a, "alice", "10.0.0.1", AclOperation.READ, ResourceType.GROUP, "g")).isTrue();
        assertThat(allowed(a, "alice", "10.0.0.2", AclOperation.READ, ResourceType.GROUP, "g")).isFalse();
        assertThat(allowed(a, "bob", "10.0.0.1", AclOperation.READ, ResourceType.GROUP, "g")).isFalse();
        assertThat(allowed(a, "anyone", "10.9.9.9", AclOperation.READ, ResourceType.GROUP, "h")).isTrue();
    }

    @Test
    void superUsersMayDoAnythingAndNoAclMeansTheConfiguredDefault() {
        AclAuthorizer strict = authorizer(Map.of(AclAuthorizer.SUPER_USERS, "User:admin; User:ops"));
        create(strict, acl(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:*", "*", AclOperation.ALL,
                AclPermissionType.DENY));
        assertThat(allowed(strict, "admin", AclOperation.WRITE, ResourceType.TOPIC, "t")).isTrue();
        assertThat(allowed(strict, "ops", AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster")).isTrue();
        assertThat(allowed(strict, "alice", AclOperation.READ, ResourceType.TOPIC, "no-acls")).isFalse();

        AclAuthorizer open = authorizer(Map.of(AclAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_FOUND, "true"));
        assertThat(allowed(open, "alice", AclOperation.READ, ResourceType.TOPIC, "no-acls")).isTrue();
        // Once any ACL applies to the resource (even for someone else), the default no longer does.
        create(open, allow(ResourceType.TOPIC, "no-acls", PatternType.LITERAL, "User:bob", AclOperation.READ));
        assertThat(allowed(open, "alice", AclOperation.READ, ResourceType.TOPIC, "no-acls")).isFalse();
        assertThat(allowed(open, "bob", AclOperation.READ, ResourceType.TOPIC, "no-acls")).isTrue();
    }

    @Test
    void idempotentWriteFollowsWriteOnAnyTopic() {
        AclAuthorizer a = authorizer(Map.of());
        create(a, allow(ResourceType.TOPIC, "orders-", PatternType.PREFIXED, "User:alice", AclOperation.WRITE));
        Authorization auth = Authorization.by(a);
        assertThat(auth.anyOfType(context("alice", "10.0.0.1"), AclOperation.WRITE, ResourceType.TOPIC)).isTrue();
        assertThat(auth.anyOfType(context("bob", "10.0.0.1"), AclOperation.WRITE, ResourceType.TOPIC)).isFalse();
    }

    @Test
    void authorizedOperationsAreKafkasBitField() {
        AclAuthorizer a = authorizer(Map.of());
        create(a, allow(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice", AclOperation.WRITE));
        int ops = Authorization.by(a).operations(context("alice", "10.0.0.1"), ResourceType.TOPIC, "t");
        assertThat(org.apache.kafka.common.utils.Utils.from32BitField(ops))
                .containsExactlyInAnyOrder(AclOperation.WRITE.code(), AclOperation.DESCRIBE.code());
    }

    @Test
    void invalidAclsAreRefusedWithKafkasMessages() {
        AclAuthorizer a = authorizer(Map.of());
        List<AclBinding> bad = List.of(
                allow(ResourceType.CLUSTER, "other", PatternType.LITERAL, "User:a", AclOperation.ALTER),
                allow(ResourceType.TOPIC, "", PatternType.LITERAL, "User:a", AclOperation.READ),
                allow(ResourceType.TOPIC, "t", PatternType.LITERAL, "alice-without-type", AclOperation.READ));
        List<AclCreateResult> results = a.createAcls(null, bad).stream()
                .map(f -> f.toCompletableFuture().join()).toList();
        assertThat(results).allSatisfy(r -> assertThat(r.exception()).get().isInstanceOf(InvalidRequestException.class));
        assertThat(results.get(0).exception().get()).hasMessageContaining("kafka-cluster");
        assertThat(a.aclCount()).isZero();
    }

    @Test
    void settingsAreValidated() {
        assertThatThrownBy(() -> authorizer(Map.of(AclAuthorizer.SUPER_USERS, "admin")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("super.users");
        assertThatThrownBy(() -> authorizer(Map.of(AclAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_FOUND, "yes")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("true or false");
        assertThatThrownBy(() -> AclAuthorizer.fromConfig(Map.of(AclAuthorizer.CLASS_NAME_SETTING, "com.example.Opa")))
                .isInstanceOf(InvalidConfigException.class).hasMessageContaining("StandardAuthorizer");
        assertThat(AclAuthorizer.fromConfig(Map.of())).isNull();
    }

    @Test
    void twoShellsOnOneStoreSeeEachOthersAclsAndDeletions() {
        AclAuthorizer one = authorizer(Map.of());
        AclAuthorizer two = authorizer(Map.of());
        AclBinding b = allow(ResourceType.TRANSACTIONAL_ID, "tx/1", PatternType.LITERAL, "User:al/ice", AclOperation.WRITE);
        create(one, b);
        assertThat(allowed(two, "al/ice", AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx/1")).isFalse();
        two.refresh(); // what every reconcile round does
        assertThat(allowed(two, "al/ice", AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx/1")).isTrue();
        // Deleting on the second removes what the first created (delete rereads the store first).
        var deleted = two.deleteAcls(null, List.of(new AclBindingFilter(new ResourcePatternFilter(
                ResourceType.ANY, null, PatternType.ANY), AccessControlEntryFilter.ANY))).getFirst()
                .toCompletableFuture().join();
        assertThat(deleted.aclBindingDeleteResults()).singleElement().satisfies(r -> assertThat(r.aclBinding()).isEqualTo(b));
        one.refresh();
        assertThat(one.aclCount()).isZero();
    }

    @Test
    void keysRoundTripEveryCharacter() {
        Random random = new Random(Long.getLong("acl.seed", 7));
        for (int i = 0; i < 200; i++) {
            StringBuilder name = new StringBuilder();
            for (int c = 1 + random.nextInt(20); c > 0; c--) {
                name.append((char) (0x20 + random.nextInt(0x2FF)));
            }
            AclBinding b = acl(ResourceType.values()[2 + random.nextInt(5)], name.toString(),
                    random.nextBoolean() ? PatternType.LITERAL : PatternType.PREFIXED, "User:" + name, "*",
                    AclOperation.READ, AclPermissionType.ALLOW);
            assertThat(AclAuthorizer.decode(AclAuthorizer.encode(b))).as("seed %s, name %s", 7, name).isEqualTo(b);
        }
    }

    static AuthorizableRequestContext context(String user, String host) {
        InetAddress address;
        try {
            address = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(e);
        }
        return new AuthorizableRequestContext() {
            @Override
            public String listenerName() {
                return "SASL_PLAINTEXT";
            }

            @Override
            public SecurityProtocol securityProtocol() {
                return SecurityProtocol.SASL_PLAINTEXT;
            }

            @Override
            public KafkaPrincipal principal() {
                return new KafkaPrincipal(KafkaPrincipal.USER_TYPE, user);
            }

            @Override
            public InetAddress clientAddress() {
                return address;
            }

            @Override
            public int requestType() {
                return 0;
            }

            @Override
            public int requestVersion() {
                return 0;
            }

            @Override
            public String clientId() {
                return "test";
            }

            @Override
            public int correlationId() {
                return 0;
            }
        };
    }

    /** A key-value space in a map: what two shells share, without an engine. */
    static final class MapKeyValues implements KeyValues {
        private final TreeMap<String, byte[]> map = new TreeMap<>();

        @Override
        public synchronized CompletableFuture<Optional<byte[]>> get(String key) {
            return CompletableFuture.completedFuture(Optional.ofNullable(map.get(key)));
        }

        @Override
        public synchronized CompletableFuture<Void> put(String key, byte[] value) {
            map.put(key, value);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public synchronized CompletableFuture<Void> delete(String key) {
            map.remove(key);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public synchronized CompletableFuture<SortedMap<String, byte[]>> list(String prefix) {
            return CompletableFuture.completedFuture(new TreeMap<>(map.subMap(prefix, prefix + Character.MAX_VALUE)));
        }

        @Override
        public synchronized CompletableFuture<Boolean> compareAndSet(String key, byte[] expected, byte[] value) {
            byte[] now = map.get(key);
            if (expected == null ? now != null : !java.util.Arrays.equals(now, expected)) {
                return CompletableFuture.completedFuture(false);
            }
            if (value == null) {
                map.remove(key);
            } else {
                map.put(key, value);
            }
            return CompletableFuture.completedFuture(true);
        }

        @Override
        public CompletableFuture<Void> sync() {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public synchronized CompletableFuture<Void> update(java.util.Map<String, byte[]> puts,
                                                           java.util.Collection<String> deletes) {
            map.putAll(puts);
            deletes.forEach(map::remove);
            return CompletableFuture.completedFuture(null);
        }
    }
}
