package io.s3stream.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The examples an embedder copies run and do what their comments say. */
class ExamplesTest {

    @Test
    void theQuickStartReadsItsTwentyRecordsBeforeAndAfterARestart(@TempDir Path dir) throws Exception {
        String out = ExampleRun.run(QuickStart.class, dir.toString());
        assertThat(out).contains("appended 10 batches (20 records); durable up to offset 20")
                .contains("after restart: stream").contains("holds [0, 20)")
                .contains("read again: offsets [18, 20) event-9a,event-9b");
    }

    @Test
    void aStreamMovesToAnotherNodeWhichReadsItAllAndFencesTheOldHandle(@TempDir Path dir) throws Exception {
        String out = ExampleRun.run(StreamHandoff.class, dir.toString());
        assertThat(out).contains("node 1 wrote stream").contains("up to offset 5 (epoch 0)")
                .containsPattern("moved to node 2 in [0-9.]+ ms; it holds \\[0, 5\\) at epoch 1")
                .contains("node 1's old (closed) handle refuses appends")
                .contains("offset 0: written on node 1: 0").contains("offset 9: written on node 2: 4");
    }
}
