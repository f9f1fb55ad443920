import CArchive

/// One zlib raw-deflate stream (no header, no trailer), reused block after block by one worker of
/// ``ParallelGzip``, or entry after entry by one worker of ``ParallelZip``: the only place
/// Backstage calls zlib, beside libarchive's owners in this folder.
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

    /// Deflates `input` as one block of a stream: with `dictionary` (the 32 KiB before it) unless
    /// `store` (then at level 0: deflate would not shrink it), ending with a sync flush, or with the
    /// stream's end when `last`.
    func deflateBlock(_ input: [UInt8], dictionary: [UInt8], store: Bool, last: Bool) -> [UInt8] {
        deflateReset(stream)
        // Right after a reset, a change of level takes effect at once, with nothing to flush.
        deflateParams(stream, store ? 0 : level, Z_DEFAULT_STRATEGY)
        if !store && !dictionary.isEmpty {
            dictionary.withUnsafeBufferPointer { _ = deflateSetDictionary(stream, $0.baseAddress, uInt($0.count)) }
        }
        // Room for incompressible input, the sync marker and the final block.
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(input.count))) + 64)
        var produced = 0
        input.withUnsafeBufferPointer { input in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.pointee.avail_in = uInt(input.count)
            while true {
                if produced == output.count { output += [UInt8](repeating: 0, count: 64 << 10) }
                output.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_out = out.baseAddress! + produced
                    stream.pointee.avail_out = uInt(out.count - produced)
                    _ = deflate(stream, last ? Z_FINISH : Z_SYNC_FLUSH)
                    produced = out.count - Int(stream.pointee.avail_out)
                }
                // Done when all input is in and the flush fitted (Z_FINISH: the stream ended).
                if stream.pointee.avail_in == 0 && produced < output.count { break }
            }
        }
        output.removeSubrange(produced...)
        return output
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

    /// The CRC-32 of `bytes` following `crc` (zlib's, several bytes a cycle).
    static func crc32(_ crc: UInt, _ bytes: UnsafeRawBufferPointer) -> UInt {
        CArchive.crc32(crc, bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(bytes.count))
    }

    /// The CRC-32 of `bytes`.
    static func crc32(_ bytes: [UInt8]) -> UInt {
        bytes.withUnsafeBufferPointer { CArchive.crc32(0, $0.baseAddress, uInt($0.count)) }
    }

    /// The CRC-32 of two byte runs one after the other, from the CRC of each and the second's length.
    static func crc32(combining first: UInt, _ second: UInt, secondLength: Int) -> UInt {
        crc32_combine(first, second, off_t(secondLength))
    }

    /// The CRC-32 of nothing.
    static let emptyCRC32: UInt = CArchive.crc32(0, nil, 0)
}
