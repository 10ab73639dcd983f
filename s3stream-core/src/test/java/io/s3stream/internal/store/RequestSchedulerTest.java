package io.s3stream.internal.store;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RequestSchedulerTest {

    @Test
    void aRequestThatThrowsAnErrorFailsAloneAndStrandsNothing() throws Exception {
        RequestScheduler scheduler = new RequestScheduler(1);
        CompletableFuture<String> first = new CompletableFuture<>();
        CompletableFuture<String> a = scheduler.submit(ObjectStorage.Priority.UPLOAD, () -> first);
        CompletableFuture<String> b = scheduler.submit(ObjectStorage.Priority.UPLOAD, () -> {
            throw new OutOfMemoryError("Java heap space (injected)");
        });
        CompletableFuture<String> c = scheduler.submit(ObjectStorage.Priority.UPLOAD,
                () -> CompletableFuture.completedFuture("c"));
        assertThat(scheduler.queued()).isEqualTo(2);

        first.complete("a"); // frees the slot: b runs and throws, then c must still run

        assertThat(a.get(1, TimeUnit.SECONDS)).isEqualTo("a");
        assertThatThrownBy(() -> b.get(1, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(OutOfMemoryError.class);
        assertThat(c.get(1, TimeUnit.SECONDS)).isEqualTo("c");
        assertThat(scheduler.inFlight()).isZero();
        assertThat(scheduler.queued()).isZero();
    }

    @Test
    void aRequestReturningNoFutureFailsInsteadOfHanging() throws Exception {
        RequestScheduler scheduler = new RequestScheduler(1);
        CompletableFuture<String> nothing = scheduler.submit(ObjectStorage.Priority.TAIL_READ, () -> null);
        assertThatThrownBy(() -> nothing.get(1, TimeUnit.SECONDS)).hasCauseInstanceOf(IllegalStateException.class);
        assertThat(scheduler.submit(ObjectStorage.Priority.TAIL_READ, () -> CompletableFuture.completedFuture(1))
                .get(1, TimeUnit.SECONDS)).isEqualTo(1);
    }
}
