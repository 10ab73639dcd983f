package io.s3stream.kafka.shell.topic;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What DescribeConfigs may show of a configuration value. Kafka's password-type keys ({@code *.password},
 * {@code sasl.jaas.config}, client secrets) are sensitive: answered with no value and {@code isSensitive} set, as Kafka
 * answers them. The shell's storage URIs ({@code s3stream.object.store}, {@code s3stream.wal}, …) may carry
 * credentials in their query ({@code accessKey}, {@code secretKey}, Azure's {@code key}, SAS {@code sig} or a whole
 * {@code connectionString} with its {@code AccountKey}): those
 * parameters are masked and the rest of the URI is shown, so an operator still sees which store a shell uses.
 */
final class SensitiveConfigs {
    static final String MASK = "[hidden]";
    /** Query parameters that hold credentials, by name (case-insensitive). */
    private static final Pattern SECRET_PARAM = Pattern.compile(
            "(?i)([?&](?:[a-z0-9_.-]*(?:secret|password|passwd|token|credential)[a-z0-9_.-]*|accesskey|access_key|key|sig|sas|signature|connectionstring)=)([^&#]*)");

    private SensitiveConfigs() {
    }

    /** Whether {@code key} is one whose value is never shown. */
    static boolean sensitiveKey(String key) {
        String k = key.toLowerCase(Locale.ROOT);
        return k.contains("password") || k.contains("secret") || k.endsWith("jaas.config") || k.endsWith(".token")
                || k.contains("credentials");
    }

    /** {@code value} with the credentials in its URI query masked; the value itself when it has none. */
    static String masked(String value) {
        if (value == null || value.indexOf('?') < 0) {
            return value;
        }
        Matcher m = SECRET_PARAM.matcher(value);
        return m.find() ? m.reset().replaceAll("$1" + Matcher.quoteReplacement(MASK)) : value;
    }
}
