import CArchive

/// One zlib raw-deflate stream (no header, no trailer), reused entry after entry by one worker of
/// ``ParallelZip`` for the files too large to hold whole for ``BlockDeflater``: the only place
/// Backstage calls zlib to compress, beside libarchive's owners in this folder.
/// Not Sendable: one thread owns it.
final class RawDeflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private let level: Int32

    /// A stream at `level` (zlib's 0–9); nil when zlib cannot allocate its state.
    init?(level: Int32) {
        self.level = level
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard backstage_deflate_init_raw(stream, level) == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            return nil
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    // MARK: One stream, block after block (a zip entry)

    /// The level the stream compresses at now: 0 while it stores, ``level`` otherwise.
    private var current: Int32 = -1
    /// zlib's status when ``compress(_:store:finish:into:filled:flush:)`` last returned false.
    private(set) var failure: Int32 = Z_OK

    /// Starts a new stream at ``level``.
    func restart() {
        deflateReset(stream)
        // Right after a reset, a change of level takes effect at once, with nothing to flush.
        deflateParams(stream, level, Z_DEFAULT_STRATEGY)
        current = level
    }

    /// Deflates all of `input` into `output` from `filled` on, handing `output` to `flush` each
    /// time it is full; ends the stream after it when `finish`. When `store` is given the stream
    /// first switches to level 0 (true: deflate would not shrink `input`) or back to ``level``,
    /// which ends the block it was in. False when zlib fails (a stream state it rejects).
    func compress(
        _ input: UnsafeRawBufferPointer, store: Bool?, finish: Bool, into output: UnsafeMutableRawBufferPointer,
        filled: inout Int, flush: (UnsafeRawBufferPointer) throws -> Void
    ) rethrows -> Bool {
        let out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
        var attempts = 0
        while let store, (store ? 0 : level) != current {
            // The change compresses what the stream holds first, which needs room (Z_BUF_ERROR: more).
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
            stream.pointee.next_out = out + filled
            stream.pointee.avail_out = uInt(output.count - filled)
            let status = deflateParams(stream, store ? 0 : level, Z_DEFAULT_STRATEGY)
            filled = output.count - Int(stream.pointee.avail_out)
            if status == Z_OK {
                current = store ? 0 : level
                break
            }
            guard status == Z_BUF_ERROR, attempts < 64 else {
                failure = status
                return false
            }
            attempts += 1
            try flush(UnsafeRawBufferPointer(rebasing: output[..<filled]))
            filled = 0
        }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        while true {
            if filled == output.count {
                try flush(UnsafeRawBufferPointer(output))
                filled = 0
            }
            stream.pointee.next_out = out + filled
            stream.pointee.avail_out = uInt(output.count - filled)
            let status = deflate(stream, finish ? Z_FINISH : Z_NO_FLUSH)
            filled = output.count - Int(stream.pointee.avail_out)
            if status == Z_STREAM_ERROR {
                failure = status
                return false
            }
            if finish ? status == Z_STREAM_END : stream.pointee.avail_in == 0 && filled < output.count { return true }
        }
    }

    /// The CRC-32 of `bytes` following `crc` (libdeflate's: ``BlockDeflater/crc32(_:_:)``).
    static func crc32(_ crc: UInt, _ bytes: UnsafeRawBufferPointer) -> UInt {
        UInt(BlockDeflater.crc32(UInt32(truncatingIfNeeded: crc), bytes))
    }

    /// The CRC-32 of nothing.
    static let emptyCRC32: UInt = 0
}
