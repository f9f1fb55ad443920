import Backstage
import Foundation

/// What a worker of ``ParallelBlocks`` makes of one block: bytes that, written one block after the
/// other, are the compressed file (gzip members, zstd frames). Each worker has its own; it is used
/// on that worker's thread only.
protocol BlockEncoder: AnyObject {
    func encode(_ block: UnsafeRawBufferPointer) throws(ArchiveError) -> [UInt8]
}

/// A stream compressed on several threads: cut into blocks of a fixed size at fixed offsets, each
/// encoded by a worker on its own, written one after the other in order. Every decision depends on
/// the bytes only, so the file is the same whatever the number of workers (one included).
///
/// The calling thread feeds it (``consume(_:)``, as libarchive's tar writer produces bytes) and
/// writes the encoded blocks, in order, as they come back. It never waits for one block while a
/// worker is idle and the next blocks are at hand: workers take blocks from a queue up to
/// `blocksInFlightPerWorker` per worker ahead of the file, and a block that ends early waits in
/// memory for its turn. Memory is bounded by that: at most so many blocks, with their output.
///
/// Not Sendable: the thread that writes the tar owns it.
final class ParallelBlocks: FinishingArchiveSink {
    let blockSize: Int
    private let output: ArchiveOutput
    private let queue: Queue
    private let workers = ThreadGroup()
    private let maxInFlight: Int
    private var block: [UInt8] = []
    private var submitted = 0
    private var written = 0
    private var finished = false
    /// The first failure (a full disk): the stream is broken, nothing more is written.
    private var failure: ArchiveError?

    /// Starts `workers` threads, each with the encoder `makeEncoder` makes on that thread; an
    /// error there (no memory for the compressor, a setting refused) stops the stream, and the
    /// writer throws it at its next block.
    init(
        output: ArchiveOutput, blockSize: Int, workers count: Int, blocksInFlightPerWorker: Int = 3,
        makeEncoder: @escaping @Sendable () throws(ArchiveError) -> any BlockEncoder
    ) {
        self.output = output
        self.blockSize = blockSize
        self.queue = Queue()
        self.maxInFlight = max(2, blocksInFlightPerWorker * max(1, count))
        block.reserveCapacity(blockSize)
        let queue = self.queue
        for _ in 0..<max(1, count) {
            workers.start {
                let encoder: any BlockEncoder
                do throws(ArchiveError) { encoder = try makeEncoder() } catch { return queue.fail(error) }
                while let job = queue.next() {
                    let encoded = job.input.withUnsafeBytes { bytes in
                        Result { () throws(ArchiveError) in try encoder.encode(bytes) }
                    }
                    switch encoded {
                    case .success(let bytes): queue.complete(job.index, bytes)
                    case .failure(let error): return queue.fail(error)
                    }
                }
            }
        }
    }

    deinit {
        queue.stop()
        workers.wait()
    }

    func consume(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        if let failure { throw failure }
        do {
            var rest = bytes
            while !rest.isEmpty {
                let take = min(rest.count, blockSize - block.count)
                block.append(contentsOf: rest.prefix(take))
                rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(take))
                if block.count == blockSize { try submit() }
            }
        } catch {
            failure = error
            throw error
        }
    }

    /// Encodes what is left, waits for every block and writes them. A stream given no bytes is
    /// one empty block (a gzip file holds at least one member, a zstd file one frame).
    func finish() throws(ArchiveError) {
        if let failure { throw failure }
        guard !finished else { return }
        finished = true
        do {
            if !block.isEmpty || submitted == 0 { try submit() }
            while written < submitted { try writeNext(waiting: true) }
        } catch {
            failure = error
            throw error
        }
        queue.stop()
    }

    private func submit() throws(ArchiveError) {
        // Back-pressure: never more than maxInFlight blocks encoded or encoding ahead of the file.
        while submitted - written >= maxInFlight { try writeNext(waiting: true) }
        queue.push(Job(index: submitted, input: block))
        block = []
        block.reserveCapacity(blockSize)
        submitted += 1
        while try writeNext(waiting: false) {}
    }

    /// Writes the next block in order if it is encoded (waiting for it when asked); false if it
    /// is not ready.
    @discardableResult
    private func writeNext(waiting: Bool) throws(ArchiveError) -> Bool {
        guard written < submitted else { return false }
        guard let done = try queue.take(written, waiting: waiting) else {
            guard !waiting else {
                throw ArchiveError(
                    cause: .stopped, message: "the compressing threads stopped", archivePath: output.archivePath)
            }
            return false
        }
        try output.write(done)
        written += 1
        return true
    }

    private struct Job: Sendable {
        var index: Int
        var input: [UInt8]
    }

    /// Blocks waiting for a worker, and encoded blocks waiting to be written.
    private final class Queue: @unchecked Sendable {
        private let condition = NSCondition()
        private var jobs: [Job] = []
        private var jobsStart = 0
        private var done: [Int: [UInt8]] = [:]
        private var stopped = false
        private var failure: ArchiveError?

        func push(_ job: Job) {
            condition.lock()
            jobs.append(job)
            condition.broadcast()
            condition.unlock()
        }

        /// The next block to encode, or nil once stopped.
        func next() -> Job? {
            condition.lock()
            defer { condition.unlock() }
            while jobsStart == jobs.count && !stopped { condition.wait() }
            guard jobsStart < jobs.count, !stopped else { return nil }
            let job = jobs[jobsStart]
            jobs[jobsStart].input = []
            jobsStart += 1
            if jobsStart > 64 {
                jobs.removeFirst(jobsStart)
                jobsStart = 0
            }
            return job
        }

        func complete(_ index: Int, _ encoded: [UInt8]) {
            condition.lock()
            done[index] = encoded
            condition.broadcast()
            condition.unlock()
        }

        /// The encoded block `index` (waiting for it when asked); nil when it is not ready; throws
        /// a worker's failure.
        func take(_ index: Int, waiting: Bool) throws(ArchiveError) -> [UInt8]? {
            condition.lock()
            defer { condition.unlock() }
            while done[index] == nil && waiting && failure == nil && !stopped { condition.wait() }
            if let encoded = done.removeValue(forKey: index) { return encoded }
            if let failure { throw failure }
            return nil
        }

        /// A worker failed: every worker stops, and the writer throws `error`.
        func fail(_ error: ArchiveError) {
            condition.lock()
            if failure == nil { failure = error }
            stopped = true
            condition.broadcast()
            condition.unlock()
        }

        func stop() {
            condition.lock()
            stopped = true
            condition.broadcast()
            condition.unlock()
        }
    }
}
