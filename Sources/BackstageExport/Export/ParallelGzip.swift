import Backstage
import Foundation

/// A gzip file compressed on several threads, the way pigz does it: the stream is cut into
/// 128 KiB blocks, each deflated by a worker with the 32 KiB before it as its dictionary and
/// ended by a sync flush (the last one finishes the stream), the blocks' CRC-32s combined in
/// order. The result is one ordinary gzip member that any gzip reader inflates.
///
/// Block boundaries are fixed offsets of the input, so the bytes written are the same whatever
/// the number of workers (one included). Memory is bounded: at most four blocks per worker are
/// in flight, about 1 MiB per worker with zlib's state.
///
/// The calling thread feeds it (``consume(_:)``, as libarchive's tar writer produces bytes) and
/// writes the compressed blocks, in order, as they come back.
final class ParallelGzip: ArchiveSink {
    static let blockSize = 128 << 10
    static let window = 32 << 10

    private let output: ArchiveOutput
    private let queue: Queue
    private let workers = ThreadGroup()
    private let maxInFlight: Int
    private var block: [UInt8] = []
    private var dictionary: [UInt8] = []
    private var submitted = 0
    private var written = 0
    private var crc = RawDeflater.emptyCRC32
    private var length: UInt64 = 0
    private var finished = false
    /// The first failure (a full disk): the stream is broken, nothing more is written.
    private var failure: ArchiveError?

    /// Writes the gzip header to `output` and starts `workers` compressing threads at `level`
    /// (zlib's 0–9, 6 when nil, as gzip).
    init(output: ArchiveOutput, level: Int?, workers count: Int) throws(ArchiveError) {
        let level = Int32(max(0, min(9, level ?? 6)))
        self.output = output
        self.queue = Queue()
        self.maxInFlight = 4 * max(1, count)
        block.reserveCapacity(Self.blockSize)
        // RFC 1952 header: deflate, no name, no time (reproducible), XFL as gzip sets it, OS = Unix.
        try output.write([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, level == 9 ? 2 : level == 1 ? 4 : 0, 3])
        let queue = self.queue
        for _ in 0..<max(1, count) {
            workers.start { Self.work(queue, level: level) }
        }
    }

    deinit {
        queue.stop()
        workers.wait()
    }

    func consume(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        if let failure { throw failure }
        do {
            try append(bytes)
        } catch {
            failure = error
            throw error
        }
    }

    private func append(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        var rest = bytes
        while !rest.isEmpty {
            let take = min(rest.count, Self.blockSize - block.count)
            block.append(contentsOf: rest.prefix(take))
            rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(take))
            if block.count == Self.blockSize { try submit(last: false) }
        }
    }

    /// Compresses what is left, waits for every block, writes them and the trailer.
    func finish() throws(ArchiveError) {
        if let failure { throw failure }
        guard !finished else { return }
        finished = true
        try submit(last: true)
        while written < submitted { try writeNext(waiting: true) }
        queue.stop()
        var trailer = [UInt8]()
        for shift in stride(from: 0, to: 32, by: 8) {
            trailer.append(UInt8(truncatingIfNeeded: UInt32(truncatingIfNeeded: crc) >> shift))
        }
        for shift in stride(from: 0, to: 32, by: 8) {
            trailer.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
        }
        try output.write(trailer)
    }

    private func submit(last: Bool) throws(ArchiveError) {
        // Back-pressure: never more than maxInFlight blocks compressed or compressing ahead of the file.
        while submitted - written >= maxInFlight { try writeNext(waiting: true) }
        let job = Job(index: submitted, input: block, dictionary: dictionary, last: last)
        // Every block but the last is full, so the next one's dictionary is this one's tail.
        if !last { dictionary = Array(block.suffix(Self.window)) }
        block.removeAll(keepingCapacity: true)
        queue.push(job)
        submitted += 1
        while try writeNext(waiting: false) {}
    }

    /// Writes the next block in order if it is compressed (waiting for it when asked); false if
    /// it is not ready.
    @discardableResult
    private func writeNext(waiting: Bool) throws(ArchiveError) -> Bool {
        guard written < submitted else { return false }
        guard let done = queue.take(written, waiting: waiting) else {
            // Waiting ends without the block only when a worker could not start (no memory for zlib).
            if waiting {
                throw ArchiveError(
                    cause: .outOfMemory, message: "zlib could not allocate its compression state",
                    archivePath: output.archivePath)
            }
            return false
        }
        try output.write(done.output)
        crc = RawDeflater.crc32(combining: crc, done.crc, secondLength: done.inputCount)
        length += UInt64(done.inputCount)
        written += 1
        return true
    }

    // MARK: Workers

    private struct Job: Sendable {
        var index: Int
        var input: [UInt8]
        var dictionary: [UInt8]
        var last: Bool
    }

    private struct Done: Sendable {
        var output: [UInt8]
        var crc: UInt
        var inputCount: Int
    }

    /// Jobs waiting for a worker, and finished blocks waiting to be written.
    private final class Queue: @unchecked Sendable {
        private let condition = NSCondition()
        private var jobs: [Job] = []
        private var jobsStart = 0
        private var done: [Int: Done] = [:]
        private var stopped = false

        func push(_ job: Job) {
            condition.lock()
            jobs.append(job)
            condition.broadcast()
            condition.unlock()
        }

        /// The next job, or nil once stopped.
        func next() -> Job? {
            condition.lock()
            defer { condition.unlock() }
            while jobsStart == jobs.count && !stopped { condition.wait() }
            guard jobsStart < jobs.count, !stopped else { return nil }
            let job = jobs[jobsStart]
            jobsStart += 1
            if jobsStart > 64 {
                jobs.removeFirst(jobsStart)
                jobsStart = 0
            }
            return job
        }

        func complete(_ index: Int, _ result: Done) {
            condition.lock()
            done[index] = result
            condition.broadcast()
            condition.unlock()
        }

        func take(_ index: Int, waiting: Bool) -> Done? {
            condition.lock()
            defer { condition.unlock() }
            while done[index] == nil && waiting && !stopped { condition.wait() }
            return done.removeValue(forKey: index)
        }

        func stop() {
            condition.lock()
            stopped = true
            condition.broadcast()
            condition.unlock()
        }
    }

    private static func work(_ queue: Queue, level: Int32) {
        guard let deflater = RawDeflater(level: level) else {
            queue.stop()
            return
        }
        while let job = queue.next() {
            let store = level > 0 && job.input.withUnsafeBufferPointer(CompressionProbe.isIncompressible)
            let output = deflater.deflateBlock(job.input, dictionary: job.dictionary, store: store, last: job.last)
            queue.complete(
                job.index, Done(output: output, crc: RawDeflater.crc32(job.input), inputCount: job.input.count))
        }
    }
}

/// Which blocks deflate would not shrink.
package enum CompressionProbe {
    /// True when deflate would not shrink `block`, which is then stored: deflate spends as long
    /// on random-looking bytes (photos, videos, archives) as on text, 37 MB/s at level 6 here, to
    /// make them larger by 0.03%. Such a block has its byte values spread evenly (none more than
    /// twice as frequent as the average, the test zstd's Huffman coder makes), and no 8 bytes in
    /// it that recur within deflate's window. A block it misjudges is stored, not damaged; the
    /// decision depends on the block's bytes only, so the archive is the same for any number of
    /// workers.
    package static func isIncompressible(_ block: UnsafeBufferPointer<UInt8>) -> Bool {
        guard block.count >= 4096, let base = block.baseAddress else { return false }
        // Text shows in its first 16 KiB; the whole block is counted only if they look random.
        for length in [min(block.count, 16 << 10), block.count] {
            var counts = [UInt32](repeating: 0, count: 256)
            counts.withUnsafeMutableBufferPointer { counts in
                for byte in UnsafeBufferPointer(start: base, count: length) { counts[Int(byte)] &+= 1 }
            }
            if counts.max()! > UInt32(length >> 7) + 4 { return false }
        }
        // Repeats: the last position of each 8-byte value's hash, within deflate's 32 KiB window.
        var last = [Int32](repeating: -1, count: 1 << 14)
        var repeated = 0
        let raw = UnsafeRawPointer(base)
        last.withUnsafeMutableBufferPointer { last in
            var index = 0
            while index + 8 <= block.count {
                let value = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let slot = Int(truncatingIfNeeded: (value &* 0x9E37_79B9_7F4A_7C15) >> 50)
                let previous = Int(last[slot])
                last[slot] = Int32(index)
                if previous >= 0 && index - previous <= 32 << 10
                    && raw.loadUnaligned(fromByteOffset: previous, as: UInt64.self) == value
                {
                    repeated += 8
                    index += 8
                } else {
                    index += 1
                }
            }
        }
        return repeated < block.count / 64
    }
}
