package io.s3stream.kafka.shell;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.fail;

/** Runs non-Java clients as processes. Missing clients skip the test locally and fail it in CI (CI=true). */
final class ExternalClients {
    /** The Python with confluent-kafka: bin/test installs it in a virtual environment and names it here. */
    static final String PYTHON = System.getenv().getOrDefault("S3STREAM_PYTHON", "python3");

    private ExternalClients() {
    }

    static void require(String what, String... probe) {
        boolean present;
        try {
            Process p = new ProcessBuilder(probe).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            present = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            present = false;
        }
        if (!present) {
            String msg = what + " is not installed (bin/test installs it: kcat with apt-get, confluent-kafka in a virtual "
                    + "environment named by S3STREAM_PYTHON, franz-client built from test-infra/franz-client)";
            if ("true".equals(System.getenv("CI"))) {
                fail(msg);
            }
            Assumptions.abort(msg);
        }
    }

    record Result(int exit, String output) {
    }

    static Result run(byte[] stdin, List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().write(stdin);
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("timed out: " + command);
        }
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }
}
