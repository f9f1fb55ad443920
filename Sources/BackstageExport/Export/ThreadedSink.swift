import Backstage
import Foundation

/// A sink that runs another on a thread of its own: ``consume(_:)`` copies the bytes into the next
/// of a few blocks and returns at once, and the thread hands each full block to the inner sink.
/// The thread writing the tar (reading the files, libarchive's headers) goes on while the inner
/// sink compresses and writes, and waits only when every block is full; the inner sink has the
/// next block at hand, not behind a file read. The stream the inner sink is given is the same,
/// byte for byte, cut at other places: its output does not change.
///
/// libzstd's multi-threaded stream is fed by one thread which, when its workers are busy, waits
/// for the oldest job to end; that thread also read the files: while it read, a worker that
/// had ended its job stayed idle. The CLI pipeline (`tar | zstd -T0`) reads in another process.
///
/// Not Sendable: the thread that writes the tar owns it. The inner sink is used by the sink's
/// thread only, until ``finish()`` returns or the sink is released.
final class ThreadedSink: FinishingArchiveSink {
    /// Bytes of each block handed to the inner sink.
    static let blockSize = 1 << 20

    private let state: State
    private let thread = ThreadGroup()
    private let archivePath: String
    private var current: Int
    private var filled = 0
    private var finished = false

    /// Starts the thread feeding `inner`, with `blocks` blocks (at least 2) of ``blockSize`` bytes.
    init(_ inner: any FinishingArchiveSink, blocks: Int = 4, archivePath: String) {
        let state = State(inner: inner, blocks: max(2, blocks))
        self.state = state
        self.archivePath = archivePath
        current = state.takeFree() ?? 0
        thread.start { state.run() }
    }

    deinit {
        state.stop()
        thread.wait()
    }

    func consume(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        var rest = bytes
        while !rest.isEmpty {
            let block = state.buffers[current]
            let take = min(rest.count, block.count - filled)
            UnsafeMutableRawBufferPointer(rebasing: block[filled..<filled + take]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: rest[..<take]))
            filled += take
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            if filled == block.count { try handOver() }
        }
    }

    /// Hands over what is left, waits for the inner sink to take every block, then finishes it.
    func finish() throws(ArchiveError) {
        guard !finished else { return }
        finished = true
        if filled > 0 {
            state.push(current, count: filled)
            filled = 0
        }
        state.end()
        thread.wait()
        if let failure = state.failure { throw failure }
    }

    /// The current block to the thread; the next free one (waiting for it) becomes current.
    private func handOver() throws(ArchiveError) {
        state.push(current, count: filled)
        filled = 0
        guard let next = state.takeFree() else {
            throw state.failure
                ?? ArchiveError(
                    cause: .inconsistent, message: "the compressing thread stopped", archivePath: archivePath)
        }
        current = next
    }

    /// The blocks, which are full and which free, and the thread's failure; shared by both threads
    /// under `condition`.
    private final class State: @unchecked Sendable {
        let buffers: [UnsafeMutableRawBufferPointer]
        private let inner: any FinishingArchiveSink
        private let condition = NSCondition()
        private var free: [Int]
        /// Full blocks in stream order, with their byte counts.
        private var full: [(index: Int, count: Int)] = []
        private var ended = false
        private var stopped = false
        private(set) var failure: ArchiveError?

        init(inner: any FinishingArchiveSink, blocks: Int) {
            self.inner = inner
            buffers = (0..<blocks).map { _ in .allocate(byteCount: ThreadedSink.blockSize, alignment: 64) }
            free = Array(0..<blocks)
        }

        deinit {
            for buffer in buffers { buffer.deallocate() }
        }

        /// A free block, waiting for one; nil once the thread failed or stopped.
        func takeFree() -> Int? {
            condition.lock()
            defer { condition.unlock() }
            while free.isEmpty && failure == nil && !stopped { condition.wait() }
            guard failure == nil, !stopped else { return nil }
            return free.removeLast()
        }

        func push(_ index: Int, count: Int) {
            condition.lock()
            full.append((index, count))
            condition.signal()
            condition.unlock()
        }

        /// No more blocks: the thread finishes the inner sink once it took every block.
        func end() {
            condition.lock()
            ended = true
            condition.broadcast()
            condition.unlock()
        }

        /// Stops the thread without finishing the inner sink (the export failed or was cancelled).
        func stop() {
            condition.lock()
            stopped = true
            condition.broadcast()
            condition.unlock()
        }

        /// The thread: each full block to the inner sink in order, then its end.
        func run() {
            while let (index, count) = next() {
                do throws(ArchiveError) {
                    try inner.consume(UnsafeRawBufferPointer(rebasing: buffers[index][..<count]))
                } catch {
                    fail(error)
                    return
                }
                condition.lock()
                free.append(index)
                condition.signal()
                condition.unlock()
            }
            condition.lock()
            let finishing = ended && !stopped && failure == nil
            condition.unlock()
            guard finishing else { return }
            do throws(ArchiveError) {
                try inner.finish()
            } catch {
                fail(error)
            }
        }

        /// The next full block; nil at the end of the stream or when stopped.
        private func next() -> (Int, Int)? {
            condition.lock()
            defer { condition.unlock() }
            while full.isEmpty && !ended && !stopped { condition.wait() }
            guard !stopped, !full.isEmpty else { return nil }
            return full.removeFirst()
        }

        private func fail(_ error: ArchiveError) {
            condition.lock()
            failure = error
            condition.broadcast()
            condition.unlock()
        }
    }
}
