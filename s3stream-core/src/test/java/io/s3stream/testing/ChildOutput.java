package io.s3stream.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Reading what a child process of a crash test wrote to its output file, which a SIGKILL may cut mid-line. */
public final class ChildOutput {
    private ChildOutput() {
    }

    /**
     * The highest number following {@code tag} at the start of a whole line of {@code out} (the last line counts only
     * once its newline is written); -1 if there is none or the file does not exist yet.
     */
    public static long last(Path out, String tag) throws IOException {
        if (!Files.exists(out)) {
            return -1;
        }
        String text = Files.readString(out, StandardCharsets.UTF_8);
        int end = text.lastIndexOf('\n');
        long last = -1;
        for (String line : end < 0 ? List.<String>of() : List.of(text.substring(0, end).split("\n"))) {
            if (line.startsWith(tag)) {
                last = Math.max(last, Long.parseLong(line.substring(tag.length())));
            }
        }
        return last;
    }
}
