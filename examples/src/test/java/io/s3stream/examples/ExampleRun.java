package io.s3stream.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs an example's main() in its own JVM, as bin/example does, and returns what it printed. */
final class ExampleRun {
    private ExampleRun() {
    }

    static String run(Class<?> example, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), example.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        boolean exited = p.waitFor(120, TimeUnit.SECONDS);
        String output = new String(out, StandardCharsets.UTF_8);
        assertThat(exited).as("%s finished: %s", example.getSimpleName(), output).isTrue();
        assertThat(p.exitValue()).as("%s exit status; output:%n%s", example.getSimpleName(), output).isZero();
        return output;
    }
}
