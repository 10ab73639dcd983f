package io.s3stream.store.azure.internal;

import com.azure.storage.blob.BlobServiceClientBuilder;
import com.azure.storage.common.StorageSharedKeyCredential;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.s3stream.spi.ObjectStore;
import io.s3stream.spi.ObjectStoreException;
import io.s3stream.testing.AzuriteServer;
import io.s3stream.testing.TestStores;

import java.nio.charset.StandardCharsets;

/**
 * The child JVM of {@link AzuriteEntraIdIT}: an application whose store URI holds no secret and whose identity comes
 * from its environment, as an operator runs it. Arguments: the HTTPS blob endpoint, then the store URI. Creates the
 * test container with Azurite's public development key (the store's client never sees it), then writes, reads, lists
 * and deletes through the store. Prints {@code entra OK} and exits 0, or prints the store's refusal and exits 3.
 */
public final class EntraIdProbe {
    private EntraIdProbe() {
    }

    public static void main(String[] args) {
        new BlobServiceClientBuilder().endpoint(args[0])
                .credential(new StorageSharedKeyCredential(AzuriteServer.ACCOUNT, AzuriteServer.KEY))
                .buildClient().getBlobContainerClient(AzuriteServer.CONTAINER).createIfNotExists();
        try (ObjectStore store = TestStores.open(args[1])) {
            byte[] data = "written with an Entra ID token".getBytes(StandardCharsets.UTF_8);
            store.put("entra/object", Unpooled.wrappedBuffer(data)).join();
            ByteBuf read = store.get("entra/object").join();
            String back = read.toString(StandardCharsets.UTF_8);
            read.release();
            int listed = store.list("entra/").join().size();
            store.delete(java.util.List.of("entra/object")).join();
            if (!back.equals(new String(data, StandardCharsets.UTF_8)) || listed != 1) {
                System.out.println("mismatch: read '" + back + "', listed " + listed);
                System.exit(2);
            }
            System.out.println("entra OK");
        } catch (ObjectStoreException e) {
            System.out.println("refused: " + e.getMessage());
            System.exit(3);
        }
    }
}
