package io.s3stream.kafka.shell;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bad input at the port: random frames, mutated valid frames, unknown API keys and versions, corrupt and truncated
 * batches, oversized frames. The broker must answer with the right error or close that connection, store nothing
 * bad, and keep serving a well-behaved client.
 */
@Timeout(120)
class ProtocolFuzzTest {
    @RegisterExtension
    final ShellFixture fx = new ShellFixture(Map.of("socket.request.max.bytes", "1048576"));

    private Socket connect() throws IOException {
        Socket s = new Socket("127.0.0.1", fx.shell.port());
        s.setSoTimeout(3000);
        return s;
    }

    private static byte[] frame(RequestHeader header, org.apache.kafka.common.requests.AbstractRequest request) {
        ByteBuffer b = request.serializeWithHeader(header);
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    private static void send(Socket s, byte[] payload) throws IOException {
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        out.writeInt(payload.length);
        out.write(payload);
        out.flush();
    }

    /** Reads one response frame, or null if the broker closed the connection (or said nothing in time). */
    private static ByteBuffer receive(Socket s) throws IOException {
        try {
            DataInputStream in = new DataInputStream(s.getInputStream());
            int size = in.readInt();
            byte[] body = new byte[size];
            in.readFully(body);
            return ByteBuffer.wrap(body);
        } catch (java.io.EOFException | java.net.SocketException | SocketTimeoutException e) {
            return null;
        }
    }

    private static MemoryRecords batch(String... values) {
        SimpleRecord[] records = new SimpleRecord[values.length];
        for (int i = 0; i < values.length; i++) {
            records[i] = new SimpleRecord(System.currentTimeMillis(), null, values[i].getBytes());
        }
        return MemoryRecords.withRecords(Compression.NONE, records);
    }

    private static byte[] produceFrame(int correlationId, MemoryRecords records) {
        ProduceRequestData data = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(5000);
        ProduceRequestData.TopicProduceData t = new ProduceRequestData.TopicProduceData().setName("fuzz");
        t.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(records));
        data.topicData().add(t);
        ProduceRequest req = new ProduceRequest.Builder((short) 9, (short) 9, data).build((short) 9);
        return frame(new RequestHeader(ApiKeys.PRODUCE, (short) 9, "fuzz", correlationId), req);
    }

    private Errors produceError(byte[] frame, int correlationId) throws IOException {
        try (Socket s = connect()) {
            send(s, frame);
            ByteBuffer resp = receive(s);
            assertThat(resp).as("a produce response").isNotNull();
            RequestHeader header = new RequestHeader(ApiKeys.PRODUCE, (short) 9, "fuzz", correlationId);
            ProduceResponse r = (ProduceResponse) AbstractResponse.parseResponse(resp, header);
            return Errors.forCode(r.data().responses().iterator().next().partitionResponses().getFirst().errorCode());
        }
    }

    @Test
    void rejectsBadBatchesWithKafkaErrorsAndStoresNothing() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("fuzz", 1, (short) 1))).all().get();
        }
        assertThat(produceError(produceFrame(1, batch("good")), 1)).isEqualTo(Errors.NONE);

        MemoryRecords corrupt = batch("abc", "def");
        ByteBuffer buf = corrupt.buffer();
        buf.put(buf.limit() - 1, (byte) (buf.get(buf.limit() - 1) ^ 0x55)); // flip a payload bit: CRC mismatch
        assertThat(produceError(produceFrame(2, corrupt), 2)).isEqualTo(Errors.CORRUPT_MESSAGE);

        // One whole batch followed by the first bytes of another: the partial batch must not be dropped silently.
        ByteBuffer first = batch("whole").buffer();
        ByteBuffer second = batch("truncated-batch-payload").buffer();
        ByteBuffer joined = ByteBuffer.allocate(first.remaining() + 40);
        joined.put(first.duplicate()).put(second.duplicate().limit(40)).flip();
        MemoryRecords truncated = MemoryRecords.readableRecords(joined);
        assertThat(produceError(produceFrame(3, truncated), 3)).isEqualTo(Errors.CORRUPT_MESSAGE);

        MemoryRecords big = batch("x".repeat(1_100_000 / 2), "y".repeat(1_100_000 / 2));
        try (Socket s = connect()) { // larger than socket.request.max.bytes: the connection is closed
            try {
                send(s, produceFrame(4, big));
            } catch (java.net.SocketException closedWhileWriting) {
                // the broker closed the connection as soon as it saw the length prefix: the expected outcome
            }
            assertThat(receive(s)).isNull();
        }
        try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
            assertThat(p.send(new ProducerRecord<>("fuzz", "after")).get().offset()).isEqualTo(1);
        }
    }

    /** {@code batch} with {@code edit} applied to its bytes and its CRC recomputed, so that only the records are bad. */
    private static MemoryRecords withValidCrc(MemoryRecords batch, java.util.function.Consumer<ByteBuffer> edit) {
        ByteBuffer b = ByteBuffer.allocate(batch.sizeInBytes()).put(batch.buffer().duplicate()).flip();
        edit.accept(b);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(b.duplicate().position(ATTRIBUTES_OFFSET));
        b.putInt(CRC_OFFSET, (int) crc.getValue());
        return MemoryRecords.readableRecords(b);
    }

    /**
     * {@code batch}'s header over a gzip stream of {@code records} (the bytes of its records region, uncompressed):
     * one record counted, the codec set to gzip, the length and CRC made right.
     */
    private static MemoryRecords compressedRecords(MemoryRecords batch, byte[] records) {
        java.io.ByteArrayOutputStream gzip = new java.io.ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream out = new java.util.zip.GZIPOutputStream(gzip)) {
            out.write(records);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        byte[] compressed = gzip.toByteArray();
        ByteBuffer b = ByteBuffer.allocate(RECORDS_OFFSET + compressed.length);
        b.put(batch.buffer().duplicate().limit(RECORDS_OFFSET)).put(compressed).flip();
        b.putInt(8, b.limit() - 12); // batch length
        b.putShort(ATTRIBUTES_OFFSET, (short) (b.getShort(ATTRIBUTES_OFFSET) & ~7 | 1)); // gzip
        b.putInt(23, 0); // lastOffsetDelta
        b.putInt(RECORDS_OFFSET - 4, 1); // record count
        return withValidCrc(MemoryRecords.readableRecords(b), ignored -> { });
    }

    private static final int CRC_OFFSET = 17;
    private static final int ATTRIBUTES_OFFSET = 21;
    private static final int RECORDS_OFFSET = 61;

    @Test
    void rejectsBatchesWithARightCrcWhoseRecordsCannotBeReadAndStoresNothing() throws Exception {
        try (Admin admin = fx.admin()) {
            admin.createTopics(List.of(new NewTopic("fuzz", 1, (short) 1))).all().get();
        }
        MemoryRecords plain = batch("first record", "second record", "third record");
        Random random = new Random(7);
        Map<String, MemoryRecords> bad = new java.util.LinkedHashMap<>();
        bad.put("garbage records", withValidCrc(plain, b -> {
            for (int i = RECORDS_OFFSET; i < b.limit(); i++) {
                b.put(i, (byte) random.nextInt());
            }
        }));
        bad.put("a record length that lies", withValidCrc(plain, b -> b.put(RECORDS_OFFSET, (byte) 0x7e)));
        bad.put("compression codec 7", withValidCrc(plain,
                b -> b.putShort(ATTRIBUTES_OFFSET, (short) (b.getShort(ATTRIBUTES_OFFSET) | 7))));
        bad.put("gzip claimed over plain bytes", withValidCrc(plain,
                b -> b.putShort(ATTRIBUTES_OFFSET, (short) (b.getShort(ATTRIBUTES_OFFSET) & ~7 | 1))));
        // One compressed record whose length claims 2 GiB (a 40-byte gzip stream): Kafka's reading iterator
        // allocates the claimed length before it reads the bytes, which stopped the broker (ExitOnOutOfMemoryError);
        // now refused as larger than max.message.bytes before the iterator runs.
        bad.put("a compressed record that claims 2 GiB", compressedRecords(plain,
                new byte[] {(byte) 0xfc, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0}));
        // snappy-java allocates a raw block's claimed uncompressed length before decompressing it: this 73-byte batch
        // (no stream header, a block claiming 2 GiB - 1) stopped the broker at c03f92d; and a chunk's claimed length
        // (here 400 MiB, of which 2 KiB follow) before reading it. Both refused before snappy-java sees them.
        MemoryRecords snappy = MemoryRecords.withRecords(Compression.snappy().build(),
                new SimpleRecord(1L, null, "s".repeat(2_000).getBytes()));
        bad.put("a snappy block that claims 2 GiB", withValidCrc(snappy, b -> {
            b.put(RECORDS_OFFSET, new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07, 0, 'x'});
            b.limit(RECORDS_OFFSET + 12).putInt(8, RECORDS_OFFSET + 12 - 12);
        }));
        bad.put("a snappy chunk that claims 400 MiB", withValidCrc(snappy,
                b -> b.putInt(RECORDS_OFFSET + 16, 400 << 20)));
        bad.put("a count larger than the records", withValidCrc(plain, b -> {
            b.putInt(RECORDS_OFFSET - 4, 4);
            b.putInt(23, 3); // lastOffsetDelta agrees with the count, the records do not
        }));
        int correlation = 10;
        for (Map.Entry<String, MemoryRecords> e : bad.entrySet()) {
            Errors error = produceError(produceFrame(++correlation, e.getValue()), correlation);
            System.out.println("right CRC, " + e.getKey() + ": " + error);
            if (e.getKey().contains("compressed record that claims 2 GiB")) {
                assertThat(error).as(e.getKey()).isEqualTo(Errors.MESSAGE_TOO_LARGE); // and the broker lives on
            } else if (e.getKey().startsWith("a snappy")) {
                assertThat(error).as(e.getKey()).isEqualTo(Errors.CORRUPT_MESSAGE); // and the broker lives on
            } else {
                assertThat(error).as(e.getKey()).isIn(Errors.CORRUPT_MESSAGE, Errors.INVALID_RECORD);
            }
        }
        MemoryRecords gzip = MemoryRecords.withRecords(Compression.gzip().build(),
                new SimpleRecord(System.currentTimeMillis(), null, "compressed".getBytes()));
        assertThat(produceError(produceFrame(++correlation, gzip), correlation)).as("a real gzip batch")
                .isEqualTo(Errors.NONE);
        try (KafkaProducer<String, String> p = fx.producer(Map.of())) {
            assertThat(p.send(new ProducerRecord<>("fuzz", "after")).get().offset())
                    .as("only the gzip batch was stored before it").isEqualTo(1);
        }
        try (var consumer = fx.consumer(null, Map.of())) {
            consumer.assign(List.of(new org.apache.kafka.common.TopicPartition("fuzz", 0)));
            consumer.seekToBeginning(consumer.assignment());
            List<String> read = new java.util.ArrayList<>();
            long deadline = System.currentTimeMillis() + 15_000;
            while (read.size() < 2 && System.currentTimeMillis() < deadline) {
                consumer.poll(java.time.Duration.ofMillis(200)).forEach(r -> read.add(String.valueOf(r.value())));
            }
            assertThat(read).as("a consumer reads past nothing it cannot decode").containsExactly("compressed", "after");
        }
    }

    @Test
    void survivesRandomAndMutatedFrames() throws Exception {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        byte[] valid = produceFrame(7, batch("seed"));
        int closed = 0;
        for (int i = 0; i < 400; i++) {
            byte[] payload;
            switch (i % 4) {
                case 0 -> {
                    payload = new byte[random.nextInt(64)];
                    random.nextBytes(payload);
                }
                case 1 -> {
                    payload = valid.clone();
                    for (int k = 0; k < 1 + random.nextInt(4); k++) {
                        payload[random.nextInt(payload.length)] = (byte) random.nextInt();
                    }
                }
                case 2 -> {
                    payload = valid.clone();
                    payload[0] = (byte) random.nextInt(); // API key
                    payload[1] = (byte) random.nextInt();
                    payload[2] = 0;
                    payload[3] = (byte) random.nextInt(); // version
                }
                default -> payload = java.util.Arrays.copyOf(valid, random.nextInt(valid.length));
            }
            try (Socket s = connect()) {
                s.setSoTimeout(500);
                if (i % 50 == 49) {
                    // A length prefix larger than the limit, or negative.
                    new DataOutputStream(s.getOutputStream()).writeInt(random.nextBoolean() ? Integer.MAX_VALUE : -5);
                } else {
                    send(s, payload);
                }
                if (receive(s) == null) {
                    closed++;
                }
            }
        }
        assertThat(closed).as("seed " + seed).isPositive();
        try (KafkaProducer<String, String> p = fx.producer(Map.of());
             Admin admin = fx.admin()) {
            p.send(new ProducerRecord<>("fuzz-after", "still serving")).get();
            assertThat(admin.listTopics().names().get()).as("seed " + seed).contains("fuzz-after");
        }
    }

    @Test
    void unsupportedVersionsGetUnsupportedVersion() throws Exception {
        // ApiVersions at a version from the future: v0 response with UNSUPPORTED_VERSION and our API list.
        ByteBuffer b = ByteBuffer.allocate(64);
        b.putShort(ApiKeys.API_VERSIONS.id).putShort((short) 99).putInt(42).putShort((short) 4).put("test".getBytes()).put((byte) 0);
        b.flip();
        byte[] payload = new byte[b.remaining()];
        b.get(payload);
        try (Socket s = connect()) {
            send(s, payload);
            ByteBuffer resp = receive(s);
            assertThat(resp).isNotNull();
            assertThat(resp.getInt()).isEqualTo(42);
            assertThat(resp.getShort()).isEqualTo(Errors.UNSUPPORTED_VERSION.code());
        }
        // A known API we do not serve (CreateAcls): UNSUPPORTED_VERSION, connection stays usable.
        var acls = new org.apache.kafka.common.requests.CreateAclsRequest.Builder(
                new org.apache.kafka.common.message.CreateAclsRequestData()).build((short) 3);
        try (Socket s = connect()) {
            RequestHeader h = new RequestHeader(ApiKeys.CREATE_ACLS, (short) 3, "t", 5);
            send(s, frame(h, acls));
            ByteBuffer resp = receive(s);
            assertThat(resp).isNotNull();
            var r = (org.apache.kafka.common.requests.CreateAclsResponse) AbstractResponse.parseResponse(resp, h);
            assertThat(r.errorCounts()).isEmpty(); // no creations requested: the error goes per creation
        }
    }
}
