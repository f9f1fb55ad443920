import CArchive

/// A tar.zst's zstd stream, compressed by libzstd's own workers (its multi-threaded streaming API)
/// and written to the archive as they hand it back: libarchive writes the bare tar into it
/// (``ArchiveWriter/init(sink:format:level:archivePath:)``), as ``ParallelGzip`` takes a tar.gz's.
///
/// One zstd frame, at the CLI's default level (3) unless told, with a content checksum as the
/// CLI writes one (every reader checks it: a flipped bit in the archive is an error on import, not
/// a damaged document). libzstd cuts the stream into jobs of ``jobSize`` bytes, each compressed
/// by a worker with the end of the job before it as its window: the frame is the same whatever
/// the number of workers, from 1 up. Its default jobs, 8 MiB at level 3, held about 40 MB of
/// buffers and contexts (a tar.zst export peaked at 93 MB of RSS); 2 MiB jobs hold 18 MB, for
/// the same CPU time and a frame 0.2% smaller on the bench's documents.
///
/// Not Sendable: the thread that writes the tar owns it.
final class ZstdSink: FinishingArchiveSink {
    static let defaultLevel: Int32 = 3
    static let jobSize: Int32 = 2 << 20

    private let context: OpaquePointer
    private let output: ArchiveOutput
    private let buffer: UnsafeMutableRawBufferPointer
    private var finished = false
    /// The first failure (a full disk): the stream is broken, nothing more is written.
    private var failure: ArchiveError?

    /// A stream at `level` (zstd's, 3 when nil) on `workers` threads (at least 1) written to `output`.
    init(output: ArchiveOutput, level: Int?, workers: Int) throws(ArchiveError) {
        // libzstd would clamp a level out of range without a word: refused, as libarchive did.
        if let level, !(1...Int(ZSTD_maxCLevel())).contains(level) {
            throw ArchiveError(
                cause: .invalidOption, message: "zstd compression levels are 1 to \(ZSTD_maxCLevel()), not \(level)",
                archivePath: output.archivePath)
        }
        guard let context = ZSTD_createCCtx() else {
            throw ArchiveError(
                cause: .outOfMemory, message: "libzstd could not allocate its compression context",
                archivePath: output.archivePath)
        }
        self.context = context
        self.output = output
        buffer = .allocate(byteCount: ZSTD_CStreamOutSize() * 4, alignment: 16)
        let settings: [(ZSTD_cParameter, Int32, String)] = [
            (ZSTD_c_compressionLevel, level.map { Int32(clamping: $0) } ?? Self.defaultLevel, "compression level"),
            (ZSTD_c_checksumFlag, 1, "checksum"),
            (ZSTD_c_nbWorkers, Int32(clamping: max(1, workers)), "number of threads"),
            (ZSTD_c_jobSize, Self.jobSize, "job size"),
        ]
        for (parameter, value, name) in settings {
            let status = ZSTD_CCtx_setParameter(context, parameter, value)
            if ZSTD_isError(status) != 0 {
                throw ArchiveError(
                    cause: .zstd(code: Int32(ZSTD_getErrorCode(status).rawValue)),
                    message: "zstd refused its \(name) \(value): \(Self.describe(status))",
                    archivePath: output.archivePath)
            }
        }
    }

    deinit {
        ZSTD_freeCCtx(context)
        buffer.deallocate()
    }

    func consume(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        try compress(bytes, end: false)
    }

    /// Ends the frame: waits for every job and writes what is left.
    func finish() throws(ArchiveError) {
        guard !finished else { return }
        finished = true
        try compress(UnsafeRawBufferPointer(start: nil, count: 0), end: true)
    }

    private func compress(_ bytes: UnsafeRawBufferPointer, end: Bool) throws(ArchiveError) {
        if let failure { throw failure }
        var input = ZSTD_inBuffer(src: bytes.baseAddress, size: bytes.count, pos: 0)
        while true {
            var out = ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
            let left = ZSTD_compressStream2(context, &out, &input, end ? ZSTD_e_end : ZSTD_e_continue)
            if ZSTD_isError(left) != 0 {
                let error = ArchiveError(
                    cause: .zstd(code: Int32(ZSTD_getErrorCode(left).rawValue)),
                    message: "zstd failed: \(Self.describe(left))",
                    archivePath: output.archivePath)
                failure = error
                throw error
            }
            do {
                try output.write(UnsafeRawBufferPointer(rebasing: buffer[..<out.pos]))
            } catch {
                failure = error
                throw error
            }
            // Done when the input is taken (continue), or when nothing is left to flush (end).
            if end ? left == 0 : input.pos == input.size { return }
        }
    }

    private static func describe(_ status: Int) -> String {
        ZSTD_getErrorName(status).map { String(cString: $0) } ?? "error \(status)"
    }
}
