package io.s3stream.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class in which Netty's leak detector reported a leaked buffer. Registered for every Jupiter test
 * through extension auto-detection ({@code junit-platform.properties} in this test-jar).
 */
public final class LeakCheckExtension implements BeforeAllCallback, AfterAllCallback {
    static {
        LeakCheck.install();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        LeakCheck.install();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        LeakCheck.assertNoLeaks();
    }
}
