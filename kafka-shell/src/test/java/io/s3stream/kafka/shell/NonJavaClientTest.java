package io.s3stream.kafka.shell;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** kcat and confluent-kafka (both librdkafka) produce and consume with keys, headers and every compression codec. */
@Timeout(180)
class NonJavaClientTest {
    @RegisterExtension
    final ShellFixture fx = new ShellFixture();

    @Test
    void kcatProducesAndConsumesEveryCodec() throws Exception {
        ExternalClients.require("kcat", "kcat", "-V");
        List<String> expected = new ArrayList<>();
        for (String codec : List.of("gzip", "lz4", "zstd", "snappy", "none")) {
            StringBuilder in = new StringBuilder();
            for (int i = 0; i < 50; i++) {
                in.append("k").append(i % 3).append(':').append(codec).append('-').append(i).append('\n');
                expected.add("k" + (i % 3) + "|" + codec + "-" + i + "|h=" + codec);
            }
            var r = ExternalClients.run(in.toString().getBytes(StandardCharsets.UTF_8), List.of("kcat", "-b", fx.bootstrap(),
                    "-P", "-t", "kc", "-K:", "-H", "h=" + codec, "-z", codec, "-X", "enable.idempotence=true"));
            assertThat(r.exit()).as(r.output()).isZero();
        }
        var consumed = ExternalClients.run(new byte[0], List.of("kcat", "-b", fx.bootstrap(), "-C", "-t", "kc",
                "-e", "-q", "-f", "%k|%s|%h|%o\\n"));
        assertThat(consumed.exit()).as(consumed.output()).isZero();
        List<String> lines = consumed.output().lines().toList();
        assertThat(lines).hasSize(expected.size());
        for (int i = 0; i < lines.size(); i++) {
            assertThat(lines.get(i)).isEqualTo(expected.get(i) + "|" + i);
        }
        // A consumer group (balanced consumer, commits) reads the same records.
        var group = ExternalClients.run(new byte[0], List.of("kcat", "-b", fx.bootstrap(), "-G", "kcat-group", "kc",
                "-e", "-q", "-o", "beginning", "-f", "%o\\n"));
        assertThat(group.exit()).as(group.output()).isZero();
        assertThat(group.output().lines().filter(l -> l.matches("\\d+")).count()).isEqualTo(expected.size());
    }

    @Test
    void confluentKafkaProducesAndConsumesEveryCodec() throws Exception {
        ExternalClients.require("confluent-kafka (" + ExternalClients.PYTHON + ")", ExternalClients.PYTHON, "-c",
                "import confluent_kafka");
        Path script = Path.of("src/test/python/confluent_roundtrip.py").toAbsolutePath();
        var r = ExternalClients.run(new byte[0], List.of(ExternalClients.PYTHON, script.toString(), fx.bootstrap(), "py"));
        assertThat(r.exit()).as(r.output()).isZero();
        assertThat(r.output()).contains("confluent-kafka OK 1500 records");
    }
}
