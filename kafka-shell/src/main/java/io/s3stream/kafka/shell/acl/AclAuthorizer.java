package io.s3stream.kafka.shell.acl;

import io.s3stream.InvalidConfigException;
import io.s3stream.KeyValues;
import io.s3stream.kafka.shell.network.RateLimitedLog;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.SecurityUtils;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * Access control lists with the semantics of Kafka's own authorizer (StandardAuthorizer), kept in the shared key-value
 * space so every shell enforces the same ones. It implements Kafka's {@link Authorizer} plug-in interface, so the
 * shell's request handlers speak to it exactly as Kafka's speak to theirs.
 *
 * <h2>Decisions, as Kafka makes them</h2>
 * A principal listed in {@code super.users} may do anything. Otherwise the ACLs that apply to a resource are those of
 * its type whose pattern matches its name: LITERAL with the same name, LITERAL {@code *}, and PREFIXED with a prefix of
 * the name. If none applies (to any principal), the answer is {@code allow.everyone.if.no.acl.found} (default false).
 * Of those whose principal ({@code User:*} matches every user) and host ({@code *} matches every address) match the
 * request's, a DENY for the operation or for ALL denies; then an ALLOW for the operation, for ALL, or for an operation
 * that implies it allows (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS);
 * anything else is denied.
 *
 * <h2>Storage</h2>
 * One key per ACL, {@code kafka/acl/<type>/<pattern type>/<name>/<principal>/<host>/<operation>/<permission>} (parts
 * URL-encoded), so creating and deleting ACLs on two shells at once cannot lose either's change. Each shell decides
 * from an immutable in-memory snapshot, reread after each change it makes and every reconcile round
 * ({@code s3stream.kafka.reconcile.ms}, 500 ms by default): an ACL created on one shell is enforced by the others within
 * that period, as Kafka's brokers enforce one once its metadata record reaches them.
 *
 * <p>Denials are logged at INFO, as Kafka's {@code kafka.authorizer.logger} does, but at most one line per
 * {@link #DENIAL_LOG_INTERVAL_SECONDS} with a count of those not shown: a client retrying a denied request cannot flood
 * the log.
 */
public final class AclAuthorizer implements Authorizer {
    public static final String SUPER_USERS = "super.users";
    public static final String ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found";
    static final long DENIAL_LOG_INTERVAL_SECONDS = 10;
    private static final String PREFIX = "kafka/acl/";
    private static final byte[] PRESENT = {1};
    private static final String WILDCARD_PRINCIPAL = "User:*";
    private static final String WILDCARD_HOST = "*";
    private static final System.Logger LOG = System.getLogger(AclAuthorizer.class.getName());

    /** The setting that turns authorization on, as in Kafka. */
    public static final String CLASS_NAME_SETTING = "authorizer.class.name";
    /**
     * The class names {@code authorizer.class.name} accepts, all meaning this authorizer: Kafka's KRaft and ZooKeeper
     * authorizers (so a broker's existing server.properties works unchanged) and this class.
     */
    public static final java.util.Set<String> NAMES = java.util.Set.of(
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer",
            AclAuthorizer.class.getName());

    private final RateLimitedLog denials = new RateLimitedLog(LOG, System.Logger.Level.INFO,
            TimeUnit.SECONDS.toNanos(DENIAL_LOG_INTERVAL_SECONDS));
    private volatile KeyValues kv;
    private volatile Set<String> superUsers = Set.of();
    private volatile boolean allowIfNoAcl;
    private volatile Snapshot snapshot = Snapshot.of(List.of());

    /**
     * Reads {@code super.users} ({@code User:alice;User:bob}) and {@code allow.everyone.if.no.acl.found}.
     *
     * @throws InvalidConfigException naming the setting and the value at fault
     */
    @Override
    public void configure(Map<String, ?> configs) {
        Object users = configs.get(SUPER_USERS);
        Set<String> parsed = new HashSet<>();
        if (users != null) {
            for (String s : users.toString().split(";")) {
                String u = s.trim();
                if (u.isEmpty()) {
                    continue;
                }
                try {
                    parsed.add(canonical(SecurityUtils.parseKafkaPrincipal(u)));
                } catch (IllegalArgumentException e) {
                    throw new InvalidConfigException(SUPER_USERS + ": '" + u + "' is not a principal of the form "
                            + "Type:name (for example User:admin)");
                }
            }
        }
        Object allow = configs.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND);
        String a = allow == null ? "false" : allow.toString().trim();
        if (!a.equalsIgnoreCase("true") && !a.equalsIgnoreCase("false")) {
            throw new InvalidConfigException(ALLOW_EVERYONE_IF_NO_ACL_FOUND + " must be true or false, was '" + a + "'");
        }
        this.superUsers = Set.copyOf(parsed);
        this.allowIfNoAcl = Boolean.parseBoolean(a);
    }

    /**
     * The authorizer {@code settings} ask for, configured, or null when {@code authorizer.class.name} is unset or empty.
     *
     * @throws InvalidConfigException for an authorizer class other than Kafka's own (custom plug-ins are not loaded)
     *                                or a bad {@code super.users} / {@code allow.everyone.if.no.acl.found}
     */
    public static AclAuthorizer fromConfig(Map<String, String> settings) {
        String name = settings.getOrDefault(CLASS_NAME_SETTING, "").trim();
        if (name.isEmpty()) {
            return null;
        }
        if (!NAMES.contains(name)) {
            throw new InvalidConfigException(CLASS_NAME_SETTING + "=" + name + ": kafka-shell has Kafka's ACL "
                    + "authorizer built in and loads no other; use one of " + new TreeSet<>(NAMES));
        }
        AclAuthorizer a = new AclAuthorizer();
        a.configure(settings);
        return a;
    }

    /** Gives the store the ACLs live in, and reads them: until then no ACL exists. */
    public void attach(KeyValues store) {
        this.kv = store;
        refresh();
    }

    /** Ready at once for every listener: the ACLs are read by {@link #attach}. */
    @Override
    public Map<Endpoint, ? extends CompletionStage<Void>> start(AuthorizerServerInfo serverInfo) {
        Map<Endpoint, CompletableFuture<Void>> out = new HashMap<>();
        serverInfo.endpoints().forEach(e -> out.put(e, CompletableFuture.completedFuture(null)));
        return out;
    }

    /** Rereads the ACLs (after a change here, and every reconcile round for the changes of other shells). */
    public void refresh() {
        KeyValues store = kv;
        if (store == null) {
            return;
        }
        List<AclBinding> all = new ArrayList<>();
        store.list(PREFIX).join().keySet().forEach(k -> {
            AclBinding b = decode(k);
            if (b == null) {
                LOG.log(System.Logger.Level.WARNING, () -> "ignoring an unreadable ACL key " + k);
            } else {
                all.add(b);
            }
        });
        snapshot = Snapshot.of(all);
    }

    @Override
    public List<AuthorizationResult> authorize(AuthorizableRequestContext ctx, List<Action> actions) {
        Snapshot s = snapshot;
        String principal = canonical(ctx.principal());
        String host = ctx.clientAddress() == null ? "" : ctx.clientAddress().getHostAddress();
        List<AuthorizationResult> out = new ArrayList<>(actions.size());
        for (Action action : actions) {
            AuthorizationResult r = decide(s, principal, host, action.operation(), action.resourcePattern());
            if (r == AuthorizationResult.DENIED && action.logIfDenied()) {
                denials.log(() -> "denied: " + principal + " from " + host + " " + action.operation() + " on "
                        + action.resourcePattern().resourceType() + " '" + action.resourcePattern().name() + "'");
            }
            out.add(r);
        }
        return out;
    }

    private AuthorizationResult decide(Snapshot s, String principal, String host, AclOperation op,
                                       ResourcePattern resource) {
        if (superUsers.contains(principal)) {
            return AuthorizationResult.ALLOWED;
        }
        TypeAcls acls = s.byType.get(resource.resourceType());
        boolean found = false;
        boolean allowed = false;
        if (acls != null) {
            for (List<AccessControlEntry> entries : acls.matching(resource.name())) {
                for (AccessControlEntry e : entries) {
                    found = true;
                    if (!(e.principal().equals(principal) || e.principal().equals(WILDCARD_PRINCIPAL))
                            || !(e.host().equals(host) || e.host().equals(WILDCARD_HOST))) {
                        continue;
                    }
                    if (e.permissionType() == AclPermissionType.DENY) {
                        if (e.operation() == AclOperation.ALL || e.operation() == op) {
                            return AuthorizationResult.DENIED;
                        }
                    } else if (implies(e.operation(), op)) {
                        allowed = true; // a DENY later in the lists still wins
                    }
                }
            }
        }
        if (allowed || (!found && allowIfNoAcl)) {
            return AuthorizationResult.ALLOWED;
        }
        return AuthorizationResult.DENIED;
    }

    /** Whether an ALLOW for {@code granted} allows {@code wanted}. */
    private static boolean implies(AclOperation granted, AclOperation wanted) {
        if (granted == wanted || granted == AclOperation.ALL) {
            return true;
        }
        return switch (wanted) {
            case DESCRIBE -> granted == AclOperation.READ || granted == AclOperation.WRITE
                    || granted == AclOperation.DELETE || granted == AclOperation.ALTER;
            case DESCRIBE_CONFIGS -> granted == AclOperation.ALTER_CONFIGS;
            default -> false;
        };
    }

    @Override
    public List<? extends CompletionStage<AclCreateResult>> createAcls(AuthorizableRequestContext ctx,
                                                                       List<AclBinding> bindings) {
        List<CompletableFuture<AclCreateResult>> out = new ArrayList<>();
        for (AclBinding b : bindings) {
            try {
                validate(b);
            } catch (ApiException e) {
                out.add(CompletableFuture.completedFuture(new AclCreateResult(e)));
                continue;
            }
            out.add(kv.put(encode(b), PRESENT).handle((v, e) -> e == null ? AclCreateResult.SUCCESS
                    : new AclCreateResult(new ApiException("could not store the ACL " + b + ": " + e.getMessage()))));
        }
        return afterOneRefresh(out);
    }

    /** {@code results}, each completed only once they all are and the snapshot was reread once for all of them. */
    private <T> List<CompletableFuture<T>> afterOneRefresh(List<CompletableFuture<T>> results) {
        CompletableFuture<Void> refreshed = CompletableFuture.allOf(results.toArray(CompletableFuture[]::new))
                .handle((v, e) -> {
                    try {
                        refresh();
                    } catch (RuntimeException failed) { // the change is stored; the next reconcile round rereads it
                        LOG.log(System.Logger.Level.WARNING, "ACLs changed but could not be reread yet", failed);
                    }
                    return null;
                });
        return results.stream().map(f -> refreshed.thenCompose(v -> f)).toList();
    }

    /** Kafka's rules for a new ACL (AclControlManager): concrete types, a name, a parseable principal. */
    static void validate(AclBinding b) {
        ResourcePattern p = b.pattern();
        AccessControlEntry e = b.entry();
        if (p.resourceType() == ResourceType.ANY || p.resourceType() == ResourceType.UNKNOWN) {
            throw new InvalidRequestException("Invalid resourceType " + p.resourceType());
        }
        if (p.patternType() != PatternType.LITERAL && p.patternType() != PatternType.PREFIXED) {
            throw new InvalidRequestException("Invalid patternType " + p.patternType());
        }
        if (e.operation() == AclOperation.ANY || e.operation() == AclOperation.UNKNOWN) {
            throw new InvalidRequestException("Invalid operation " + e.operation());
        }
        if (e.permissionType() != AclPermissionType.ALLOW && e.permissionType() != AclPermissionType.DENY) {
            throw new InvalidRequestException("Invalid permissionType " + e.permissionType());
        }
        if (p.name() == null || p.name().isEmpty()) {
            throw new InvalidRequestException("Resource name should not be empty");
        }
        if (p.resourceType() == ResourceType.CLUSTER && !p.name().equals(Authorization.CLUSTER_NAME)) {
            throw new InvalidRequestException("The only valid name for the CLUSTER resource is "
                    + Authorization.CLUSTER_NAME);
        }
        if (e.host() == null || e.host().isEmpty()) {
            throw new InvalidRequestException("Invalid host: it must be an address or *");
        }
        try {
            SecurityUtils.parseKafkaPrincipal(e.principal());
        } catch (RuntimeException x) {
            throw new InvalidRequestException("Could not parse principal from '" + e.principal() + "' "
                    + "(expected Type:name, for example User:alice)");
        }
    }

    @Override
    public List<? extends CompletionStage<AclDeleteResult>> deleteAcls(AuthorizableRequestContext ctx,
                                                                       List<AclBindingFilter> filters) {
        refresh(); // delete what every shell created, not only what this one last read
        List<AclBinding> all = snapshot.all;
        List<CompletableFuture<AclDeleteResult>> out = new ArrayList<>();
        for (AclBindingFilter filter : filters) {
            if (filter.isUnknown()) {
                out.add(CompletableFuture.completedFuture(new AclDeleteResult(
                        new InvalidRequestException("The filter " + filter + " has UNKNOWN elements"))));
                continue;
            }
            List<CompletableFuture<AclDeleteResult.AclBindingDeleteResult>> deletions = new ArrayList<>();
            for (AclBinding b : all) {
                if (filter.matches(b)) {
                    deletions.add(kv.delete(encode(b)).handle((v, e) -> e == null
                            ? new AclDeleteResult.AclBindingDeleteResult(b)
                            : new AclDeleteResult.AclBindingDeleteResult(b,
                            new ApiException("could not delete the ACL " + b + ": " + e.getMessage()))));
                }
            }
            out.add(CompletableFuture.allOf(deletions.toArray(CompletableFuture[]::new))
                    .thenApply(v -> new AclDeleteResult(deletions.stream().map(CompletableFuture::join).toList())));
        }
        return afterOneRefresh(out);
    }

    @Override
    public Iterable<AclBinding> acls(AclBindingFilter filter) {
        return snapshot.all.stream().filter(filter::matches).toList();
    }

    @Override
    public int aclCount() {
        return snapshot.all.size();
    }

    @Override
    public void close() {
    }

    /** {@code Type:name}, whatever subclass of KafkaPrincipal the connection made. */
    private static String canonical(KafkaPrincipal p) {
        return p.getPrincipalType() + ":" + p.getName();
    }

    static String encode(AclBinding b) {
        ResourcePattern p = b.pattern();
        AccessControlEntry e = b.entry();
        return PREFIX + p.resourceType() + "/" + p.patternType() + "/" + part(p.name()) + "/" + part(e.principal())
                + "/" + part(e.host()) + "/" + e.operation() + "/" + e.permissionType();
    }

    /** The binding a key names, or null for a key this version cannot read. */
    static AclBinding decode(String key) {
        String[] parts = key.substring(PREFIX.length()).split("/", -1);
        if (parts.length != 7) {
            return null;
        }
        try {
            return new AclBinding(new ResourcePattern(ResourceType.valueOf(parts[0]), unpart(parts[2]),
                    PatternType.valueOf(parts[1])), new AccessControlEntry(unpart(parts[3]), unpart(parts[4]),
                    AclOperation.valueOf(parts[5]), AclPermissionType.valueOf(parts[6])));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static String part(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static String unpart(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    /** The ACLs of one resource type, indexed for matching a name: literal by name, prefixed by prefix. */
    private static final class TypeAcls {
        final Map<String, List<AccessControlEntry>> literal = new HashMap<>();
        final Map<String, List<AccessControlEntry>> prefixed = new HashMap<>();
        /** The lengths of the prefixes present, so matching a name looks up only those. */
        int[] prefixLengths = new int[0];

        /** The entry lists whose pattern matches {@code name}. */
        List<List<AccessControlEntry>> matching(String name) {
            List<List<AccessControlEntry>> out = new ArrayList<>(2);
            List<AccessControlEntry> exact = literal.get(name);
            if (exact != null) {
                out.add(exact);
            }
            List<AccessControlEntry> wildcard = name.equals(ResourcePattern.WILDCARD_RESOURCE) ? null
                    : literal.get(ResourcePattern.WILDCARD_RESOURCE);
            if (wildcard != null) {
                out.add(wildcard);
            }
            for (int len : prefixLengths) {
                if (len > name.length()) {
                    break;
                }
                List<AccessControlEntry> p = prefixed.get(name.substring(0, len));
                if (p != null) {
                    out.add(p);
                }
            }
            return out;
        }
    }

    /** An immutable view of every ACL, indexed by resource type. */
    private record Snapshot(Map<ResourceType, TypeAcls> byType, List<AclBinding> all) {
        static Snapshot of(List<AclBinding> all) {
            Map<ResourceType, TypeAcls> byType = new EnumMap<>(ResourceType.class);
            Map<ResourceType, Set<Integer>> lengths = new EnumMap<>(ResourceType.class);
            for (AclBinding b : all) {
                TypeAcls t = byType.computeIfAbsent(b.pattern().resourceType(), k -> new TypeAcls());
                Map<String, List<AccessControlEntry>> index = b.pattern().patternType() == PatternType.PREFIXED
                        ? t.prefixed : t.literal;
                index.computeIfAbsent(b.pattern().name(), k -> new ArrayList<>()).add(b.entry());
                if (b.pattern().patternType() == PatternType.PREFIXED) {
                    lengths.computeIfAbsent(b.pattern().resourceType(), k -> new TreeSet<>())
                            .add(b.pattern().name().length());
                }
            }
            lengths.forEach((type, set) -> byType.get(type).prefixLengths =
                    set.stream().mapToInt(Integer::intValue).toArray());
            byType.values().forEach(t -> Arrays.sort(t.prefixLengths));
            return new Snapshot(byType, List.copyOf(all));
        }
    }
}
