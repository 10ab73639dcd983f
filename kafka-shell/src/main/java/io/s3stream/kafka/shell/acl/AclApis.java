package io.s3stream.kafka.shell.acl;

import io.s3stream.kafka.shell.network.ApiFamily;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.message.CreateAclsResponseData;
import org.apache.kafka.common.message.DeleteAclsResponseData;
import org.apache.kafka.common.message.DescribeAclsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.CreateAclsRequest;
import org.apache.kafka.common.requests.CreateAclsResponse;
import org.apache.kafka.common.requests.DeleteAclsRequest;
import org.apache.kafka.common.requests.DeleteAclsResponse;
import org.apache.kafka.common.requests.DescribeAclsRequest;
import org.apache.kafka.common.requests.DescribeAclsResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.Authorizer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * CreateAcls, DescribeAcls and DeleteAcls ({@code kafka-acls.sh}, {@code Admin#createAcls}...) over the configured
 * {@link Authorizer}; without one they answer SECURITY_DISABLED, as Kafka does. Who may call them (ALTER or DESCRIBE
 * on the cluster) is checked before, by the {@link RequestGuard}.
 */
public final class AclApis implements ApiFamily {
    private static final String NO_AUTHORIZER = "No Authorizer is configured on the broker "
            + "(set authorizer.class.name)";
    private final Authorizer authorizer;
    private final Executor blocking;

    /** @param authorizer null when none is configured */
    public AclApis(Authorizer authorizer, Executor blocking) {
        this.authorizer = authorizer;
        this.blocking = blocking;
    }

    @Override
    public Map<ApiKeys, short[]> versions() {
        return ApiFamily.versions(ApiKeys.CREATE_ACLS, 1, 3, ApiKeys.DESCRIBE_ACLS, 1, 3, ApiKeys.DELETE_ACLS, 1, 3);
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext ctx, AbstractRequest request) {
        short version = ctx.header.apiVersion();
        if (authorizer == null) {
            return ApiFamily.done(request.getErrorResponse(0, Errors.SECURITY_DISABLED.exception(NO_AUTHORIZER)));
        }
        return switch (ctx.header.apiKey()) {
            case CREATE_ACLS -> CompletableFuture.supplyAsync(() -> create(ctx, (CreateAclsRequest) request), blocking);
            case DESCRIBE_ACLS -> ApiFamily.done(describe((DescribeAclsRequest) request, version));
            case DELETE_ACLS -> CompletableFuture.supplyAsync(() -> delete(ctx, (DeleteAclsRequest) request, version),
                    blocking);
            default -> throw new IllegalArgumentException(ctx.header.apiKey() + " is not an ACL API");
        };
    }

    private AbstractResponse create(RequestContext ctx, CreateAclsRequest request) {
        List<AclBinding> bindings = new ArrayList<>();
        List<CreateAclsResponseData.AclCreationResult> results = new ArrayList<>();
        List<Integer> positions = new ArrayList<>();
        for (var creation : request.aclCreations()) {
            var result = new CreateAclsResponseData.AclCreationResult();
            results.add(result);
            try {
                bindings.add(CreateAclsRequest.aclBinding(creation));
                positions.add(results.size() - 1);
            } catch (RuntimeException e) { // an unknown enum code
                ApiError error = ApiError.fromThrowable(e);
                result.setErrorCode(Errors.INVALID_REQUEST.code()).setErrorMessage(error.messageWithFallback());
            }
        }
        var created = authorizer.createAcls(ctx, bindings);
        for (int i = 0; i < created.size(); i++) {
            AclCreateResult r = created.get(i).toCompletableFuture().join();
            var result = results.get(positions.get(i));
            r.exception().ifPresent(e -> result.setErrorCode(Errors.forException(e).code()).setErrorMessage(e.getMessage()));
        }
        return new CreateAclsResponse(new CreateAclsResponseData().setResults(results));
    }

    private AbstractResponse describe(DescribeAclsRequest request, short version) {
        AclBindingFilter filter = request.filter();
        DescribeAclsResponseData out = new DescribeAclsResponseData();
        if (filter.isUnknown()) {
            return new DescribeAclsResponse(out.setErrorCode(Errors.INVALID_REQUEST.code())
                    .setErrorMessage("The filter " + filter + " has UNKNOWN elements"), version);
        }
        return new DescribeAclsResponse(out.setResources(DescribeAclsResponse.aclsResources(authorizer.acls(filter))),
                version);
    }

    private AbstractResponse delete(RequestContext ctx, DeleteAclsRequest request, short version) {
        List<AclBindingFilter> filters = request.filters();
        var deleted = authorizer.deleteAcls(ctx, filters);
        List<DeleteAclsResponseData.DeleteAclsFilterResult> results = new ArrayList<>();
        for (var f : deleted) {
            AclDeleteResult r = f.toCompletableFuture().join();
            results.add(DeleteAclsResponse.filterResult(r));
        }
        return new DeleteAclsResponse(new DeleteAclsResponseData().setFilterResults(results), version);
    }
}
