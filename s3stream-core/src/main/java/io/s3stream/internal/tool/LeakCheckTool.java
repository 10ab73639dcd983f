package io.s3stream.internal.tool;

import io.s3stream.internal.compaction.LeakChecker;
import io.s3stream.internal.store.ObjectStores;
import io.s3stream.internal.util.Providers;
import io.s3stream.spi.MetadataStore;
import io.s3stream.spi.MetadataStoreProvider;
import io.s3stream.spi.ObjectStore;

import java.io.PrintStream;
import java.net.URI;

/**
 * Offline CLI that compares a bucket with its manifest and reports leaked objects (in the bucket, neither referenced
 * nor scheduled for deletion) and lost ones (referenced, not in the bucket).
 *
 * <p>Usage: {@code LeakCheckTool <object-store-uri> [<metadata-uri>]}, the metadata defaulting to the manifest kept in
 * that object store ({@code manifest:default}). Exit code 0 when clean, 1 on a leak or a loss, 2 on a usage or IO
 * error. Safe to run against a live system: it only reads.
 */
public final class LeakCheckTool {
    public static final int EXIT_CLEAN = 0;
    public static final int EXIT_FOUND = 1;
    public static final int EXIT_USAGE = 2;

    private LeakCheckTool() {
    }

    public static void main(String[] args) {
        int code = run(args, System.out, System.err);
        if (code != EXIT_CLEAN) {
            System.exit(code);
        }
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length < 1 || args.length > 2) {
            err.println("usage: LeakCheckTool <object-store-uri> [<metadata-uri>]   (metadata defaults to the manifest"
                    + " in the object store)");
            return EXIT_USAGE;
        }
        try (ObjectStore store = ObjectStores.open(args[0]);
             MetadataStore metadata = openMetadata(args.length == 2 ? args[1] : "manifest:default", store)) {
            LeakChecker.Report report = LeakChecker.check(store, metadata);
            out.println("objects in the bucket: " + report.bucketKeys());
            out.println("pending deletion:      " + report.pendingDeletionKeys().size());
            out.println("in flight (prepared):  " + report.inFlightKeys().size());
            report.leakedKeys().forEach(k -> out.println("LEAKED  " + k));
            report.missingObjects().forEach(k -> out.println("MISSING " + k));
            out.println(report.clean() ? "clean" : "NOT CLEAN: " + report.leakedKeys().size() + " leaked, "
                    + report.missingObjects().size() + " missing");
            return report.clean() ? EXIT_CLEAN : EXIT_FOUND;
        } catch (RuntimeException e) {
            err.println("leak check failed: " + e);
            return EXIT_USAGE;
        }
    }

    private static MetadataStore openMetadata(String uri, ObjectStore store) {
        URI parsed = URI.create(uri);
        java.util.List<MetadataStoreProvider> providers = Providers.load(MetadataStoreProvider.class, "metadata");
        MetadataStoreProvider p = Providers.byScheme(providers, MetadataStoreProvider::scheme, parsed.getScheme());
        if (p == null) {
            throw new IllegalArgumentException("no metadata store for scheme '" + parsed.getScheme() + "' (available: "
                    + Providers.schemes(providers, MetadataStoreProvider::scheme) + ")");
        }
        return p.open(parsed, store);
    }
}
