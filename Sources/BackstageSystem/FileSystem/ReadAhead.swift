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
    /// The file of entry `i`, asked for once per entry, in order, as the window reaches it (the
    /// caller's entries are read one by one, never listed: a million documents' paths are some
    /// 100 MB).
    private let file: @Sendable (Int) -> File?
    private let fileSystem: FileSystem
    private let condition = NSCondition()
    /// The entry the readers started last, and the bytes of the entries before it.
    private var reached = 0
    private var reachedStart: Int64 = 0
    private var stopped = false
    private let thread = ThreadGroup()

    /// Starts reading `files` ahead, in order; a nil stands for an entry with nothing to read (a
    /// folder, a link) so that indexes match the caller's. Call ``stop()`` when the readers are
    /// done: until then its thread waits for them to move on.
    package convenience init(_ files: [File?], window: Int64 = 64 << 20, fileSystem: FileSystem) {
        let bytes = files.reduce(Int64(0)) { $0 + ($1?.bytes ?? 0) }
        self.init(count: files.count, bytes: bytes, window: window, fileSystem: fileSystem) { files[$0] }
    }

    /// Starts reading ahead the `count` entries `file` gives (nil: nothing to read), `bytes` in all:
    /// `file` is called once for each entry, in order, on the read-ahead's thread, when the window
    /// reaches it or the readers pass it.
    package init(
        count: Int, bytes: Int64, window: Int64 = 64 << 20, fileSystem: FileSystem,
        file: @escaping @Sendable (Int) -> File?
    ) {
        self.count = count
        self.file = file
        self.window = window
        self.fileSystem = fileSystem
        guard bytes > 0 else { return }
        thread.start { [self] in run() }
    }

    /// The readers have started entry `index`, the entries before it holding `bytesBefore` bytes:
    /// the window moves on to it.
    package func reached(_ index: Int, bytesBefore: Int64) {
        condition.lock()
        if index > reached {
            reached = index
            reachedStart = bytesBefore
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
        // The bytes of the entries before `next`.
        var nextStart: Int64 = 0
        while next < count {
            condition.lock()
            while !stopped && nextStart - reachedStart >= window { condition.wait() }
            let done = stopped, readersAt = reached
            condition.unlock()
            if done { return }
            let file = file(next)
            // What the readers started is not worth asking for (a warm cache, readers ahead of this thread).
            if next >= readersAt, let file, file.bytes > 0 { fileSystem.willRead(file.path) }
            nextStart += file?.bytes ?? 0
            next += 1
        }
    }
}
