package io.s3stream.wal.blockdev.internal;

import io.s3stream.InvalidConfigException;
import io.s3stream.StorageIOException;

import java.lang.foreign.MemorySegment;

import static io.s3stream.wal.blockdev.internal.WalDescriptor.BLOCK_BYTES;

/**
 * The two header slots at the start of a WAL target. Headers are written alternately into the slot of their sequence
 * number, so a torn header write leaves the previous header intact in the other slot; the valid header with the
 * highest sequence is current. Another owner taking the WAL over writes a header of a higher sequence, which is how
 * the owner it fenced sees the takeover when it re-reads the slots. Not thread-safe: used by the WAL's opener, then by
 * its conductor alone.
 */
final class HeaderSlots {
    private final BlockIo io;
    private final MemorySegment block;
    private final long capacityBytes;
    private final String description;

    /**
     * @param block         one aligned block of scratch memory, owned by this object from now on
     * @param capacityBytes the configured capacity, which the header must match
     * @param description   the WAL, for errors
     */
    HeaderSlots(BlockIo io, MemorySegment block, long capacityBytes, String description) {
        this.io = io;
        this.block = block;
        this.capacityBytes = capacityBytes;
        this.description = description;
    }

    /**
     * The newest valid header, after checking both slots: formats a target that has no header yet; refuses a header of
     * another layout version or capacity, an inconsistent one, and slots that look like a damaged WAL.
     */
    WalDescriptor.Header load() {
        WalDescriptor.HeaderRead[] slots;
        try {
            slots = read();
        } catch (BlockIoException e) {
            throw new StorageIOException("cannot read the header of " + description + ": " + e.getMessage(), e);
        }
        WalDescriptor.Header best = null;
        for (WalDescriptor.HeaderRead slot : slots) {
            if (slot.version() != 0 && slot.version() != WalDescriptor.VERSION) {
                throw new InvalidConfigException(io.path() + " holds a WAL of an incompatible layout version "
                        + slot.version() + "; this build reads version " + WalDescriptor.VERSION);
            }
            if (slot.valid() && (best == null || slot.header().sequence() > best.sequence())) {
                best = slot.header();
            }
        }
        if (best == null) {
            if (slots[0].hasMagic() || slots[1].hasMagic()) {
                throw new InvalidConfigException(io.path() + " has no usable WAL header: slot 0: " + slots[0].problem()
                        + "; slot 1: " + slots[1].problem() + ". Refusing to format over what looks like a damaged WAL");
            }
            best = WalTarget.freshHeader(capacityBytes, 0);
            write(best);
        }
        if (best.capacityBytes() != capacityBytes) {
            throw new InvalidConfigException(io.path() + " holds a WAL formatted with a capacity of "
                    + best.capacityBytes() + " bytes, but " + capacityBytes + " bytes were configured");
        }
        if (Math.floorMod(best.scanStart(), (long) WalDescriptor.RECORD_ALIGN) != 0 || best.scanStart() < 0
                || best.trimPosition() < best.scanStart()) {
            throw new InvalidConfigException(io.path() + " has an inconsistent WAL header (scan start "
                    + best.scanStart() + ", trim position " + best.trimPosition() + ")");
        }
        return best;
    }

    /** Both slots as they are on the device (a takeover shows as a valid header of a higher sequence). */
    WalDescriptor.HeaderRead[] read() {
        WalDescriptor.HeaderRead[] out = new WalDescriptor.HeaderRead[WalDescriptor.HEADER_SLOTS];
        for (int i = 0; i < out.length; i++) {
            io.read((long) i * BLOCK_BYTES, block);
            out[i] = WalDescriptor.decodeHeader(block);
        }
        return out;
    }

    /** Writes {@code h} into the slot of its sequence, so the other slot keeps the previous header. */
    void write(WalDescriptor.Header h) {
        WalDescriptor.encodeHeader(block, h);
        io.write(Math.floorMod(h.sequence(), WalDescriptor.HEADER_SLOTS) * (long) BLOCK_BYTES, block);
    }
}
