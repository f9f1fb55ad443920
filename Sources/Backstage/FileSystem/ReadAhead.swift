import Foundation

/// Reads files into the page cache ahead of the threads that will read them, in the order they
/// will: a thread of its own asks the kernel for each file (``FileSystem/willRead(_:bytes:)``),
/// staying at most ``window`` bytes ahead of the file the readers last started. From a cold
/// cache, a reader otherwise waits for the disk at each small file and at each large file's
/// start; with the reads already in flight it waits only when the disk is slower than it.
///
/// The cache it fills is the kernel's, reclaimable: the process's memory does not grow.
package final class ReadAhead: @unchecked Sendable {
    /// A file to read ahead: where it is and how many bytes it holds.
    package struct File: Sendable {
        package var path: String
        package var bytes: Int64

        package init(path: String, bytes: Int64) {
            self.path = path
            self.bytes = bytes
        }
    }

    /// How far ahead of the readers the kernel is asked to read.
    package let window: Int64
    private let count: Int
    /// The file of entry `i`, asked for when its turn comes (the caller's list is not copied).
    private let file: @Sendable (Int) -> File?
    /// `starts[i]`: the bytes of the files before `i`.
    private let starts: [Int64]
    private let fileSystem: FileSystem
    private let condition = NSCondition()
    private var reached = 0
    private var stopped = false
    private let thread = ThreadGroup()

    /// Starts reading `files` ahead, in order; a nil stands for an entry with nothing to read (a
    /// folder, a link) so that indexes match the caller's. Call ``stop()`` when the readers are
    /// done: until then its thread waits for them to move on.
    package convenience init(_ files: [File?], window: Int64 = 64 << 20, fileSystem: FileSystem) {
        self.init(count: files.count, window: window, fileSystem: fileSystem, bytes: { files[$0]?.bytes ?? 0 }) {
            files[$0]
        }
    }

    /// Starts reading ahead the `count` entries `file` gives, in order (nil: nothing to read),
    /// `bytes` giving their sizes: the entries' paths are made one at a time, as the window reaches
    /// them, never all at once (a million documents' paths would be some 100 MB).
    package init(
        count: Int, window: Int64 = 64 << 20, fileSystem: FileSystem, bytes: (Int) -> Int64,
        file: @escaping @Sendable (Int) -> File?
    ) {
        self.count = count
        self.file = file
        self.window = window
        self.fileSystem = fileSystem
        var starts: [Int64] = []
        starts.reserveCapacity(count + 1)
        var total: Int64 = 0
        for index in 0..<count {
            starts.append(total)
            total += bytes(index)
        }
        starts.append(total)
        self.starts = starts
        guard total > 0 else { return }
        thread.start { [self] in run() }
    }

    /// The readers have started entry `index`: the window moves on to it.
    package func reached(_ index: Int) {
        condition.lock()
        if index > reached {
            reached = index
            condition.broadcast()
        }
        condition.unlock()
    }

    /// Stops reading ahead and waits for the thread to end.
    package func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
        thread.wait()
    }

    private func run() {
        var next = 0
        while next < count {
            condition.lock()
            while !stopped && starts[next] - starts[min(reached, count)] >= window { condition.wait() }
            let done = stopped
            // Readers ahead of this thread (a warm cache): nothing behind them is worth asking for.
            next = max(next, min(reached, count - 1))
            condition.unlock()
            if done { return }
            if let file = file(next), file.bytes > 0 { fileSystem.willRead(file.path) }
            next += 1
        }
    }
}
