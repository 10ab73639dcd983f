package io.s3stream.internal.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectNotFoundException;
import io.s3stream.spi.ObjectInfo;
import io.s3stream.spi.ObjectKeys;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.testing.ObjectStoreContractTest;
import io.s3stream.testing.SmallFileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The contract against {@link FileObjectStore}, plus what only a directory has: unsafe keys, crashes, paths. */
class FileObjectStoreTest extends ObjectStoreContractTest {
    @TempDir
    Path dir;
    private Path root;

    @Override
    protected ObjectStore createStore() {
        root = dir.resolve("objects");
        return ObjectStores.open(root.toUri().toString());
    }

    @Test
    void unsafeKeysAreRefusedWithAClearError() {
        List<String> unsafe = List.of("", "/abs", "a//b", "a/", "a/../b", "..", "../escape", "a/./b", ".", "a\\b",
                ".s3stream-tmp-x", "a/.s3stream-multipart/x", "x".repeat(256), "a\uD800b");
        List<Function<String, CompletableFuture<?>>> operations = List.of(
                key -> store.put(key, Unpooled.EMPTY_BUFFER),
                key -> store.putIfAbsent(key, Unpooled.EMPTY_BUFFER),
                store::get,
                key -> store.get(key, 0, 1),
                store::head,
                key -> store.delete(List.of("fine", key)),
                store::startMultipart);
        for (String key : unsafe) {
            for (Function<String, CompletableFuture<?>> operation : operations) {
                Throwable failure = failure(operation.apply(key));
                assertThat(failure).as("key '%s'", key).isInstanceOf(ObjectStoreException.class)
                        .isNotInstanceOf(ObjectNotFoundException.class)
                        .hasMessageContaining("unsafe key");
                assertThat(((ObjectStoreException) failure).isRetriable()).isFalse();
            }
        }
        put("fine", bytes(1));
        ObjectStore.MultipartUpload upload = await(store.startMultipart("mp"));
        assertThat(failure(upload.uploadPartCopy(1, "../fine", 0, 1))).hasMessageContaining("unsafe key");
        await(upload.abort());
        assertThat(Files.exists(dir.resolve("escape"))).isFalse();
        assertThat(listKeys("")).containsExactly("fine");
    }

    @Test
    void unsafeListPrefixesAreRefused() {
        for (String prefix : List.of("../", "a//", "/a", "a/../")) {
            assertThat(failure(store.list(prefix))).as(prefix).hasMessageContaining("unsafe list prefix");
        }
        assertThat(await(store.list("a/.."))).as("'..' as the start of a segment is just a string prefix").isEmpty();
    }

    @Test
    void aRegularFileIsNotADirectory() throws IOException {
        Path file = dir.resolve("plain");
        Files.writeString(file, "x");
        for (Path path : List.of(file, file.resolve("below"))) {
            assertThatThrownBy(() -> ObjectStores.open(path.toUri().toString()))
                    .isInstanceOf(ObjectStoreException.class)
                    .hasMessageContaining(path.toString());
        }
    }

    @Test
    void anUnwritableDirectoryIsRefused() throws IOException {
        Path locked = dir.resolve("locked");
        Files.createDirectories(locked);
        Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            // Permission bits do not bind root (CI runs as root); /proc/self is a directory nobody can create files in.
            Path target = Files.isWritable(locked) ? Path.of("/proc/self") : locked;
            assertThatThrownBy(() -> ObjectStores.open(target.toUri().toString()))
                    .isInstanceOf(ObjectStoreException.class)
                    .hasMessageContaining(target.toString())
                    .hasMessageContaining("not writable");
        } finally {
            Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void aFullFileSystemIsARetriableFailureThatHealsWhenSpaceComesBack() {
        try (SmallFileSystem fs = SmallFileSystem.mount(dir.resolve("small"), 4);
             ObjectStore small = ObjectStores.open(fs.path().resolve("objects").toUri().toString())) {
            await(small.put("filler", Unpooled.wrappedBuffer(new byte[3 << 20])));
            Throwable full = failure(small.putIfAbsent("manifest/log/1", Unpooled.wrappedBuffer(new byte[2 << 20])));
            assertThat(full).isInstanceOf(ObjectStoreException.class).hasMessageContaining("No space left on device");
            assertThat(((ObjectStoreException) full).isRetriable()).as("a full disk heals when data is deleted").isTrue();
            assertThat(await(small.head("manifest/log/1"))).as("nothing half-written is visible").isEmpty();

            await(small.delete(List.of("filler")));
            assertThat(await(small.putIfAbsent("manifest/log/1", Unpooled.wrappedBuffer(new byte[2 << 20])))).isTrue();
        }
        assertThat(SpaceReserve.isOutOfSpace(new IOException("Input/output error"))).isFalse();
        assertThat(SpaceReserve.isOutOfSpace(new RuntimeException(new java.nio.file.FileSystemException(
                "/x", null, "Disk quota exceeded")))).isTrue();
    }

    @Test
    void dataObjectsLeaveTheReserveFreeForMetadataCommits() {
        try (SmallFileSystem fs = SmallFileSystem.mount(dir.resolve("reserve"), 16);
             ObjectStore small = ObjectStores.open(fs.path().resolve("objects").toUri()
                     + "?reserveBytes=4194304&minPartSizeBytes=1024")) {
            // Other files leave about 6 MiB usable.
            await(small.put("filler", Unpooled.wrappedBuffer(new byte[(int) (fs.usableBytes() - (6L << 20))])));
            String data = ObjectKeys.dataKey(7);
            Throwable refused = failure(small.put(data, Unpooled.wrappedBuffer(new byte[3 << 20])));
            assertThat(refused).isInstanceOf(ObjectStoreException.class)
                    .hasMessageContaining("refused for lack of space")
                    .hasMessageContaining("4194304 bytes kept free for metadata commits")
                    .hasMessageContaining(data);
            assertThat(((ObjectStoreException) refused).isRetriable()).isTrue();
            assertThat(await(small.head(data))).isEmpty();
            ObjectStore.MultipartUpload upload = await(small.startMultipart("tenant/" + data));
            assertThat(failure(upload.uploadPart(1, Unpooled.wrappedBuffer(new byte[3 << 20]))))
                    .as("a data object's parts, under a prefix").hasMessageContaining("refused for lack of space");
            await(upload.abort());

            await(small.put(data, Unpooled.wrappedBuffer(new byte[1 << 20]))); // leaves 5 MiB: above the reserve
            assertThat(await(small.putIfAbsent("manifest/log/1", Unpooled.wrappedBuffer(new byte[3 << 20]))))
                    .as("metadata may use the reserve").isTrue();
            assertThat(fs.usableBytes()).isLessThan(4L << 20);
        }
        try (ObjectStore none = ObjectStores.open(root.toUri() + "?reserveBytes=0")) {
            await(none.put(ObjectKeys.dataKey(8), Unpooled.wrappedBuffer(new byte[10])));
        }
        for (String bad : List.of("-1", "lots", "")) {
            assertThatThrownBy(() -> ObjectStores.open(root.toUri() + "?reserveBytes=" + bad).close()).as(bad)
                    .isInstanceOf(ObjectStoreException.class)
                    .hasMessageContaining("reserveBytes must be a non-negative integer");
        }
        assertThatThrownBy(() -> ObjectStores.open(root.toUri() + "?reserve=1").close())
                .hasMessageContaining("the settings are minPartSizeBytes, reserveBytes");
    }

    @Test
    void uriForms() {
        try (ObjectStore small = ObjectStores.open(root.toUri() + "?minPartSizeBytes=1024")) {
            assertThat(small.minPartSizeBytes()).isEqualTo(1024);
        }
        try (ObjectStore trailingSlash = ObjectStores.open("file://" + root + "/")) {
            assertThat(trailingSlash.description()).isEqualTo("file://" + root);
        }
        for (String uri : List.of("file://host" + root, "file:relative/dir", "file://" + root + "?color=blue")) {
            assertThatThrownBy(() -> ObjectStores.open(uri).close()).as(uri).isInstanceOf(ObjectStoreException.class);
        }
        assertThat(store.description()).isEqualTo("file://" + root);
    }

    @Test
    void noTemporaryOrStagingFilesRemainAfterSuccess() throws IOException {
        put("t/put", bytes(100));
        put("t/put", bytes(50));
        assertThat(putIfAbsent("t/once", bytes(10))).isTrue();
        assertThat(putIfAbsent("t/once", bytes(10))).isFalse();
        ObjectStore.MultipartUpload completed = await(store.startMultipart("t/mp"));
        uploadPart(completed, 1, bytes(store.minPartSizeBytes()));
        await(completed.uploadPartCopy(2, "t/put", 0, 50));
        await(completed.complete());
        ObjectStore.MultipartUpload aborted = await(store.startMultipart("t/aborted"));
        uploadPart(aborted, 1, bytes(10));
        await(aborted.abort());
        await(store.delete(List.of("t/put")));

        try (Stream<Path> files = Files.walk(root)) {
            assertThat(files.filter(Files::isRegularFile).map(p -> root.relativize(p).toString()).sorted().toList())
                    .containsExactly("t/mp", "t/once");
        }
        try (Stream<Path> uploads = Files.list(root.resolve(FileObjectStore.STAGING_DIR))) {
            assertThat(uploads).isEmpty();
        }
    }

    @Test
    void leftoversOfACrashAreInvisible() throws IOException {
        put("x/other", bytes(5));
        // A put that crashed after writing its temporary file, before the rename.
        Path crashedTemp = root.resolve("x").resolve(FileObjectStore.TEMP_PREFIX + UUID.randomUUID());
        Files.write(crashedTemp, bytes(100));
        // A multipart upload whose process died: its staging directory and a part.
        Path staging = root.resolve(FileObjectStore.STAGING_DIR).resolve(UUID.randomUUID().toString());
        Files.createDirectories(staging);
        Files.write(staging.resolve("00001"), bytes(100));

        assertThat(listKeys("")).containsExactly("x/other");
        assertThat(listKeys("x/")).containsExactly("x/other");
        assertThat(listKeys(".")).isEmpty();
        assertThat(await(store.head("x/y"))).isEmpty();
        assertThat(failure(store.get("x/y"))).isInstanceOf(ObjectNotFoundException.class);
        byte[] payload = bytes(7);
        assertThat(putIfAbsent("x/y", payload)).isTrue();
        assertThat(getBytes("x/y")).isEqualTo(payload);
        assertThat(listKeys("x/")).containsExactly("x/other", "x/y");
    }

    @Test
    void openingReclaimsUploadsAbandonedForADayAndNoOther() throws IOException {
        put("x/object", bytes(5));
        Path stagingRoot = root.resolve(FileObjectStore.STAGING_DIR);
        FileTime dayAndHourAgo = FileTime.from(Instant.now().minus(AbandonedUploads.ABANDONED_AFTER).minusSeconds(3600));
        // A crashed process's upload: nothing in it changed for longer than a day.
        Path abandoned = Files.createDirectories(stagingRoot.resolve(UUID.randomUUID().toString()));
        Files.setLastModifiedTime(Files.write(abandoned.resolve("00001"), bytes(100)), dayAndHourAgo);
        Files.setLastModifiedTime(abandoned, dayAndHourAgo);
        // An old directory whose latest part is recent: alive.
        Path slow = Files.createDirectories(stagingRoot.resolve(UUID.randomUUID().toString()));
        Files.setLastModifiedTime(Files.write(slow.resolve("00001"), bytes(100)), dayAndHourAgo);
        Files.write(slow.resolve("00002"), bytes(100));
        Files.setLastModifiedTime(slow, dayAndHourAgo);
        // An upload in progress in this store while another process opens the same directory.
        ObjectStore.MultipartUpload inProgress = await(store.startMultipart("x/multipart"));
        byte[] part = bytes(store.minPartSizeBytes());
        uploadPart(inProgress, 1, part);

        try (ObjectStore other = ObjectStores.open(root.toUri().toString())) {
            assertThat(Files.exists(abandoned)).isFalse();
            assertThat(Files.exists(slow)).isTrue();
            try (Stream<Path> uploads = Files.list(stagingRoot)) {
                assertThat(uploads).hasSize(2);
            }
            uploadPart(inProgress, 2, bytes(10));
            await(inProgress.complete());
            assertThat(await(other.head("x/multipart"))).map(ObjectInfo::sizeBytes).contains((long) part.length + 10);
        }
        assertThat(listKeys("")).containsExactly("x/multipart", "x/object");
        assertThat(Arrays.copyOf(getBytes("x/multipart"), part.length)).isEqualTo(part);
    }

    @Test
    void openingReclaimsTemporaryFilesAbandonedForADayAndNoOther() throws IOException {
        fixtureReclaimDone();
        byte[] payload = bytes(5);
        put("x/object", payload);
        put("a/b/c/object", bytes(6));
        FileTime dayAndHourAgo = FileTime.from(Instant.now().minus(AbandonedUploads.ABANDONED_AFTER).minusSeconds(3600));
        // Puts that crashed before their rename, beside their targets, one in a directory holding nothing else.
        Path crashed = aged(root.resolve("x").resolve(FileObjectStore.TEMP_PREFIX + UUID.randomUUID()), 100,
                dayAndHourAgo);
        Path crashedDeep = aged(root.resolve("a/b/c").resolve(FileObjectStore.TEMP_PREFIX + UUID.randomUUID()), 200,
                dayAndHourAgo);
        Path lonely = aged(Files.createDirectories(root.resolve("new/dir")).resolve(FileObjectStore.TEMP_PREFIX
                + UUID.randomUUID()), 300, dayAndHourAgo);
        // Opens that crashed between creating and deleting their probes.
        Path probe = aged(root.resolve(FileObjectStore.PROBE_PREFIX + UUID.randomUUID()), 0, dayAndHourAgo);
        Path directProbe = aged(root.resolve(FileObjectStore.DIRECT_PROBE_PREFIX + UUID.randomUUID()), 4096,
                dayAndHourAgo);
        // Another process's put in progress: its temporary file is fresh.
        Path inFlight = Files.write(root.resolve("x").resolve(FileObjectStore.TEMP_PREFIX + UUID.randomUUID()),
                bytes(50));
        // Staging is AbandonedUploads.reclaim's, by its directories' age: an old temporary file of a live upload stays.
        Path liveStaging = Files.createDirectories(root.resolve(FileObjectStore.STAGING_DIR)
                .resolve(UUID.randomUUID().toString()));
        Files.write(liveStaging.resolve("00002"), bytes(10));
        Path stagedTemp = aged(liveStaging.resolve(FileObjectStore.TEMP_PREFIX + UUID.randomUUID()), 10,
                dayAndHourAgo);
        // Not a scratch file, however old: an object.
        Path oldObject = root.resolve("x/object");
        Files.setLastModifiedTime(oldObject, dayAndHourAgo);

        try (FileObjectStore other = FileObjectStore.open(root, store.minPartSizeBytes())) {
            assertThat(other.scratchReclaimed().join()).isEqualTo(5);
            for (Path gone : List.of(crashed, crashedDeep, lonely, probe, directProbe)) {
                assertThat(Files.exists(gone)).as("%s reclaimed", root.relativize(gone)).isFalse();
            }
            for (Path kept : List.of(inFlight, stagedTemp, oldObject, root.resolve("a/b/c/object"))) {
                assertThat(Files.exists(kept)).as("%s kept", root.relativize(kept)).isTrue();
            }
            assertThat(await(other.list(""))).extracting(ObjectInfo::key).containsExactly("a/b/c/object", "x/object");
        }
        assertThat(getBytes("x/object")).isEqualTo(payload);
        // Nothing left to reclaim: a second open deletes nothing.
        try (FileObjectStore again = FileObjectStore.open(root, store.minPartSizeBytes())) {
            assertThat(again.scratchReclaimed().join()).isZero();
        }
    }

    @Test
    void theReclaimWalkStopsWhenTheStoreCloses() throws IOException {
        fixtureReclaimDone();
        FileTime dayAndHourAgo = FileTime.from(Instant.now().minus(AbandonedUploads.ABANDONED_AFTER).minusSeconds(3600));
        for (int i = 0; i < 200; i++) {
            aged(Files.createDirectories(root.resolve("d" + i)).resolve(FileObjectStore.TEMP_PREFIX + i), 1,
                    dayAndHourAgo);
        }
        int[] visits = {0};
        // The store passes "closed?" as the stop condition; here it turns true after 50 files and directories.
        int deleted = AbandonedUploads.reclaimScratch(root, Instant.now(), () -> ++visits[0] > 50);
        assertThat(deleted).as("stopped partway").isPositive().isLessThan(200);
        int rest = AbandonedUploads.reclaimScratch(root, Instant.now(), () -> false);
        assertThat(deleted + rest).isEqualTo(200);
    }

    /** The fixture's store walks its root for old scratch files at open: let it end before planting any. */
    private void fixtureReclaimDone() {
        assertThat(((FileObjectStore) store).scratchReclaimed().join()).isZero();
    }

    private Path aged(Path file, int length, FileTime modified) throws IOException {
        Files.write(file, bytes(length));
        Files.setLastModifiedTime(file, modified);
        return file;
    }

    @Test
    void objectsSurviveReopening() {
        byte[] payload = bytes(1000);
        put("durable/1", payload);
        store.close();
        assertThat(failure(store.head("durable/1"))).hasMessageContaining("closed");
        store = ObjectStores.open(root.toUri().toString());
        assertThat(getBytes("durable/1")).isEqualTo(payload);
    }

    @Test
    void anObjectAndAKeyPrefixOfTheSameNameConflict() {
        put("a/b", bytes(3));
        assertThat(failure(store.put("a/b/c", Unpooled.EMPTY_BUFFER)))
                .hasMessageContaining("'a/b'").hasMessageContaining("cannot hold an object and a key prefix");
        assertThat(await(store.head("a/b/c"))).isEmpty();
        assertThat(failure(store.get("a/b/c"))).isInstanceOf(ObjectNotFoundException.class);
        await(store.delete(List.of("a/b/c")));

        put("p/q/r", bytes(3));
        assertThat(failure(store.put("p/q", Unpooled.EMPTY_BUFFER)))
                .hasMessageContaining("cannot hold an object and a key prefix");
        assertThat(failure(store.putIfAbsent("p/q", Unpooled.EMPTY_BUFFER)))
                .as("not 'false': head says the key is free").hasMessageContaining("cannot hold");
        assertThat(await(store.head("p/q"))).isEmpty();
        assertThat(failure(store.get("p/q"))).isInstanceOf(ObjectNotFoundException.class);
        await(store.delete(List.of("p/q")));
        assertThat(listKeys("")).containsExactly("a/b", "p/q/r");
    }

    @Test
    void deleteRemovesEmptiedDirectories() {
        put("e/f/g/h", bytes(1));
        put("e/keep", bytes(1));
        await(store.delete(List.of("e/f/g/h")));
        assertThat(Files.exists(root.resolve("e/f"))).isFalse();
        assertThat(Files.exists(root.resolve("e/keep"))).isTrue();
        put("e/f", bytes(2)); // the former prefix is free for an object again
        assertThat(listKeys("e/")).containsExactly("e/f", "e/keep");
    }

    @Test
    void putsAndDeletesRacingInOneDirectoryAllSucceed() throws Exception {
        // Deletes remove emptied directories while puts create files in them; neither may fail because of the other.
        try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
            List<Future<?>> workers = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                String key = "race/dir/deeper/" + w;
                workers.add(pool.submit(() -> {
                    for (int i = 0; i < 200; i++) {
                        put(key, bytes(8));
                        await(store.delete(List.of(key)));
                    }
                }));
            }
            for (Future<?> worker : workers) {
                worker.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        }
        assertThat(listKeys("")).isEmpty();
        assertThat(Files.exists(root.resolve("race"))).isFalse();
    }

    @Test
    void fileNamesAreReadableAndEscapedWhereNeeded() {
        put("data/00ab/0000000000000001", bytes(1));
        put("u/\u00e9t\u00e9", bytes(1));
        put("u/100%", bytes(1));
        assertThat(Files.isRegularFile(root.resolve("data/00ab/0000000000000001"))).isTrue();
        assertThat(Files.isRegularFile(root.resolve("u/%C3%A9t%C3%A9"))).isTrue();
        assertThat(Files.isRegularFile(root.resolve("u/100%25"))).isTrue();
        assertThat(FileKeys.decodeName("bad%zz%4")).isEqualTo("bad%zz%4");
    }

    @Test
    void partsSmallerThanTheMinimumAreRefusedAtComplete() {
        try (ObjectStore small = ObjectStores.open(root.toUri() + "?minPartSizeBytes=100")) {
            ObjectStore.MultipartUpload upload = await(small.startMultipart("too-small"));
            uploadPart(upload, 1, bytes(99));
            uploadPart(upload, 2, bytes(10));
            assertThat(failure(upload.complete())).isInstanceOf(ObjectStoreException.class)
                    .hasMessageContaining("part 1").hasMessageContaining("100");
            uploadPart(upload, 1, bytes(100));
            await(upload.complete());
            assertThat(await(small.head("too-small")).orElseThrow().sizeBytes()).isEqualTo(110);
            ByteBuf late = Unpooled.wrappedBuffer("late".getBytes(StandardCharsets.UTF_8));
            try {
                assertThat(failure(upload.uploadPart(3, late))).hasMessageContaining("completed");
            } finally {
                late.release();
            }
        }
    }

    @Test
    void aPartAfterAbortFails() {
        ObjectStore.MultipartUpload upload = await(store.startMultipart("gone"));
        await(upload.abort());
        assertThat(failure(upload.uploadPart(1, Unpooled.EMPTY_BUFFER))).hasMessageContaining("aborted");
        assertThat(failure(upload.complete())).hasMessageContaining("aborted");
    }

    @Test
    void objectsLargerThanOneSliceArriveWhole() {
        // Writes, part copies and the concatenation at complete go to the device in 1 MiB slices: lengths around and
        // across the slice boundary, and a copy from an unaligned position, must come back byte for byte.
        int slice = ObjectFileIo.SLICE_BYTES;
        byte[] large = bytes(3 * slice + 123);
        put("big", large);
        assertThat(getBytes("big")).isEqualTo(large);
        byte[] exact = bytes(slice);
        put("exact", exact);
        assertThat(getBytes("exact")).isEqualTo(exact);

        byte[] joined;
        byte[] first = bytes(slice + 1);
        byte[] copied = java.util.Arrays.copyOfRange(large, 7, 7 + 2 * slice + 5);
        try (ObjectStore small = ObjectStores.open(root.toUri() + "?minPartSizeBytes=100")) {
            ObjectStore.MultipartUpload upload = await(small.startMultipart("joined"));
            uploadPart(upload, 1, first);
            await(upload.uploadPartCopy(2, "big", 7, 2L * slice + 5));
            uploadPart(upload, 3, bytes(10));
            await(upload.complete());
            joined = drain(await(small.get("joined")));
        }
        assertThat(joined.length).isEqualTo(first.length + copied.length + 10);
        assertThat(java.util.Arrays.copyOfRange(joined, 0, first.length)).isEqualTo(first);
        assertThat(java.util.Arrays.copyOfRange(joined, first.length, first.length + copied.length)).isEqualTo(copied);
    }

    // --------------------------------------------------------------------------------------------------------------
    // multipart parts in place

    /** The staging directory of the only upload in progress under {@code root}. */
    private static Path staging(Path root) throws IOException {
        try (Stream<Path> uploads = Files.list(root.resolve(FileObjectStore.STAGING_DIR))) {
            return uploads.collect(java.util.stream.Collectors.toList()).getFirst();
        }
    }

    private static List<String> names(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static Object inode(Path file) throws IOException {
        return Files.getAttribute(file, "unix:ino");
    }

    @ParameterizedTest(name = "directWrites={0}")
    @ValueSource(booleans = {true, false})
    void partsInNumberOrderAreWrittenInPlaceAndPublishedWithoutACopy(boolean directWrites) throws IOException {
        int page = ObjectFileIo.ALIGNMENT;
        try (FileObjectStore small = FileObjectStore.open(root, 64 << 10, -1, directWrites)) {
            byte[] p1 = bytes(64 * page);
            byte[] p2 = bytes(80 * page); // over the direct-IO minimum, a whole number of pages
            byte[] p3 = bytes(1234);
            ObjectStore.MultipartUpload upload = await(small.startMultipart("inplace/object"));
            uploadPart(upload, 1, p1);
            await(upload.uploadPartCopy(2, seed(small, p2), 0, p2.length));
            uploadPart(upload, 3, p3);
            Path staging = staging(root);
            assertThat(names(staging)).as("no part files: every part went into the object file")
                    .containsExactly(FileObjectStore.RESERVED_PREFIX + "object");
            Object staged = inode(staging.resolve(FileObjectStore.RESERVED_PREFIX + "object"));
            await(upload.complete());
            assertThat(drain(await(small.get("inplace/object")))).isEqualTo(concat(p1, p2, p3));
            assertThat(inode(root.resolve("inplace/object"))).as("the staged file itself became the object")
                    .isEqualTo(staged);
            assertThat(Files.exists(staging)).isFalse();
            assertThat(await(small.list("inplace/"))).hasSize(1);
        }
    }

    /** Puts {@code payload} under a fresh key of {@code small} and returns the key. */
    private static String seed(ObjectStore small, byte[] payload) {
        String key = "seed/" + UUID.randomUUID();
        ByteBuf data = Unpooled.wrappedBuffer(payload);
        try {
            await(small.put(key, data));
        } finally {
            data.release();
        }
        return key;
    }

    @ParameterizedTest(name = "directWrites={0}")
    @ValueSource(booleans = {true, false})
    void partsOutOfOrderAreConcatenatedInstead(boolean directWrites) throws IOException {
        int page = ObjectFileIo.ALIGNMENT;
        try (FileObjectStore small = FileObjectStore.open(root, 64 << 10, -1, directWrites)) {
            // Part 2 first ends the in-place sequence; part 1 still goes in place.
            byte[] a1 = bytes(32 * page);
            byte[] a2 = bytes(20 * page + 7);
            ObjectStore.MultipartUpload out = await(small.startMultipart("fallback/order"));
            uploadPart(out, 2, a2);
            uploadPart(out, 1, a1);
            uploadPart(out, 3, bytes(0));
            assertThat(names(staging(root))).contains("00002", "00003");
            await(out.complete());
            assertThat(drain(await(small.get("fallback/order")))).isEqualTo(concat(a1, a2));
        }
    }

    @ParameterizedTest(name = "directWrites={0}")
    @ValueSource(booleans = {true, false})
    void partsOfAnyLengthInFlightTogetherGoInPlace(boolean directWrites) throws IOException {
        // The compactor's part copies are block ranges that seldom end on a page: the parts after them must still go
        // in place (or every merge on a file:// store writes its bytes twice), while their neighbours are written at
        // the same time into the pages they share.
        int page = ObjectFileIo.ALIGNMENT;
        int minPart = 64 << 10;
        java.util.Random random = new java.util.Random(0x1A_F1ACEL);
        try (FileObjectStore small = FileObjectStore.open(root, minPart, -1, directWrites)) {
            byte[] source = bytes(4 * minPart + 3 * page);
            String sourceKey = seed(small, source);
            int[] extras = {0, 1, page - 1, page, page + 1, 3 * page - 5};
            for (int round = 0; round < 12; round++) {
                String key = "anylength/" + round;
                int count = 2 + random.nextInt(7);
                byte[][] parts = new byte[count][];
                ObjectStore.MultipartUpload upload = await(small.startMultipart(key));
                List<CompletableFuture<Void>> inFlight = new ArrayList<>();
                List<ByteBuf> held = new ArrayList<>();
                for (int n = 0; n < count; n++) {
                    boolean last = n == count - 1;
                    int length = last && random.nextBoolean() ? random.nextInt(2 * page)
                            : minPart + (random.nextBoolean() ? extras[random.nextInt(extras.length)]
                            : random.nextInt(2 * minPart));
                    if (random.nextBoolean()) {
                        int from = random.nextInt(source.length - length + 1);
                        parts[n] = Arrays.copyOfRange(source, from, from + length);
                        inFlight.add(upload.uploadPartCopy(n + 1, sourceKey, from, length));
                    } else {
                        parts[n] = bytes(length);
                        ByteBuf data = Unpooled.wrappedBuffer(parts[n]);
                        held.add(data);
                        inFlight.add(upload.uploadPart(n + 1, data));
                    }
                }
                inFlight.forEach(ObjectStoreContractTest::await);
                held.forEach(ByteBuf::release);
                Path staging = staging(root);
                assertThat(names(staging)).as("round %d: no part files", round)
                        .containsExactly(FileObjectStore.RESERVED_PREFIX + "object");
                Object staged = inode(staging.resolve(FileObjectStore.RESERVED_PREFIX + "object"));
                await(upload.complete());
                assertThat(drain(await(small.get(key)))).as("round %d", round).isEqualTo(concat(parts));
                assertThat(inode(root.resolve(key))).as("round %d: the staged file became the object", round)
                        .isEqualTo(staged);
            }
        }
    }

    @ParameterizedTest(name = "directWrites={0}")
    @ValueSource(booleans = {true, false})
    void aPartUploadedAgainReplacesItsBytesInPlace(boolean directWrites) throws IOException {
        int page = ObjectFileIo.ALIGNMENT;
        try (FileObjectStore small = FileObjectStore.open(root, 64 << 10, -1, directWrites)) {
            byte[] p1 = bytes(32 * page);
            byte[] p2 = bytes(32 * page);
            byte[] p2again = bytes(16 * page + 5); // shorter: the in-place range would be wrong for it
            byte[] p3 = bytes(99);
            ObjectStore.MultipartUpload upload = await(small.startMultipart("again/object"));
            uploadPart(upload, 1, p1);
            uploadPart(upload, 2, p2);
            uploadPart(upload, 3, p3);
            uploadPart(upload, 2, p2again);
            assertThat(names(staging(root))).as("the retry is a file of its own")
                    .containsExactly(FileObjectStore.RESERVED_PREFIX + "object", "00002");
            await(upload.complete());
            assertThat(drain(await(small.get("again/object")))).isEqualTo(concat(p1, p2again, p3));
        }
    }

    @Test
    void aCompleteRefusedInPlaceCanBeRetried() throws IOException {
        try (FileObjectStore small = FileObjectStore.open(root, 64 << 10)) {
            byte[] only = bytes(100 << 10);
            ObjectStore.MultipartUpload upload = await(small.startMultipart("blocked"));
            uploadPart(upload, 1, only);
            ByteBuf blocker = Unpooled.wrappedBuffer(bytes(10));
            try {
                await(small.put("blocked/child", blocker)); // the key is now a directory
            } finally {
                blocker.release();
            }
            assertThat(failure(upload.complete())).isInstanceOf(ObjectStoreException.class);
            await(small.delete(List.of("blocked/child")));
            await(upload.complete());
            assertThat(drain(await(small.get("blocked")))).isEqualTo(only);
        }
    }
}
