import CArchive

/// A zstd file compressed on several threads: the stream is cut into 2 MiB blocks at fixed
/// offsets, each compressed by a worker into a zstd frame of its own, with its content size and
/// checksum, written one after the other in order (``ParallelBlocks``). A zstd file is a series of
/// frames (RFC 8878 §3.1); every reader (zstd, libarchive and so bsdtar and Backstage's import,
/// Python's `compression.zstd`) reads them as one stream, and checks each frame's checksum.
///
/// libzstd's own multi-threaded stream (`ZSTD_c_nbWorkers`) writes one frame, its jobs primed
/// with the end of the job before them; but the thread feeding it waits for the oldest job to end
/// while another worker has ended its own and sits idle, and it rehashes each job's primer. Frames
/// of their own keep every worker busy: on the bench's documents (text and random bytes), 2 MiB
/// frames took 17% less CPU time than one stream (`zstd -3` of the tar cut in 2 MiB pieces: 2.1 s
/// against 2.6 s for 203 MB) for a file 0.4% larger. Two blocks per worker wait in memory at most:
/// a tar.zst export peaked at 52–56 MB of RSS, against 48–50 MB with libzstd's 2 MiB jobs.
///
/// The level is zstd's, 3 (the CLI's default) unless told; zstd itself stores what it cannot
/// shrink, so random bytes cost it next to nothing.
enum ParallelZstd {
    static let blockSize = 2 << 20
    static let defaultLevel: Int32 = 3

    /// A sink writing to `output` at `level` (zstd's, 3 when nil) on `workers` threads; a level
    /// outside libzstd's range is refused (libzstd would clamp it without a word).
    static func sink(output: ArchiveOutput, level: Int?, workers: Int) throws(ArchiveError) -> ParallelBlocks {
        if let level, !(1...Int(ZSTD_maxCLevel())).contains(level) {
            throw ArchiveError(
                cause: .invalidOption, message: "zstd compression levels are 1 to \(ZSTD_maxCLevel()), not \(level)",
                archivePath: output.archivePath)
        }
        let level = level.map { Int32($0) } ?? defaultLevel
        let archivePath = output.archivePath
        // Each worker makes its own context; one that fails (memory, a setting refused) stops the
        // stream with its error.
        return ParallelBlocks(output: output, blockSize: blockSize, workers: workers, blocksInFlightPerWorker: 2) {
            () throws(ArchiveError) in try Frames(level: level, archivePath: archivePath)
        }
    }

    /// One worker's compression context, and the frame it makes of a block.
    private final class Frames: BlockEncoder {
        private let context: OpaquePointer
        private let archivePath: String
        /// A frame at most: what a block waiting for its turn holds is its frame's size, not this.
        private let scratch: UnsafeMutableRawBufferPointer

        init(level: Int32, archivePath: String) throws(ArchiveError) {
            guard let context = ZSTD_createCCtx() else {
                throw ArchiveError(
                    cause: .outOfMemory, message: "libzstd could not allocate its compression context",
                    archivePath: archivePath)
            }
            self.context = context
            self.archivePath = archivePath
            scratch = .allocate(byteCount: ZSTD_compressBound(ParallelZstd.blockSize), alignment: 16)
            let settings: [(ZSTD_cParameter, Int32, String)] = [
                (ZSTD_c_compressionLevel, level, "compression level"),
                (ZSTD_c_checksumFlag, 1, "checksum"),
            ]
            for (parameter, value, name) in settings {
                let status = ZSTD_CCtx_setParameter(context, parameter, value)
                // Every property is set: deinit frees the context when this throws.
                if ZSTD_isError(status) != 0 {
                    throw ArchiveError(
                        cause: .zstd(code: Int32(ZSTD_getErrorCode(status).rawValue)),
                        message: "zstd refused its \(name) \(value): \(Frames.describe(status))",
                        archivePath: archivePath)
                }
            }
        }

        deinit {
            ZSTD_freeCCtx(context)
            scratch.deallocate()
        }

        /// The block as one frame.
        func encode(_ block: UnsafeRawBufferPointer) throws(ArchiveError) -> [UInt8] {
            let status = ZSTD_compress2(context, scratch.baseAddress, scratch.count, block.baseAddress, block.count)
            if ZSTD_isError(status) != 0 {
                throw ArchiveError(
                    cause: .zstd(code: Int32(ZSTD_getErrorCode(status).rawValue)),
                    message: "zstd failed: \(Frames.describe(status))", archivePath: archivePath)
            }
            return Array(UnsafeRawBufferPointer(rebasing: scratch[..<status]))
        }

        static func describe(_ status: Int) -> String {
            ZSTD_getErrorName(status).map { String(cString: $0) } ?? "error \(status)"
        }
    }
}
