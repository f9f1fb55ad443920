import Foundation

/// Writes a file SQLite is filling to disk while it fills it: every `interval`, a background thread
/// starts the writeback of the pages dirtied so far (`sync_file_range`, which does not wait). The
/// fsync that makes the file durable afterwards then has little left to write, and the disk works
/// while the copy does, on the second core. Advisory: nothing depends on it for durability.
package final class BackgroundWriteback: @unchecked Sendable {
    private let stopped = DispatchSemaphore(value: 0)
    private let thread = ThreadGroup()

    /// Starts the thread; the file need not exist yet.
    package init(path: String, interval: Double = 0.03) {
        let stopped = self.stopped
        thread.start {
            var fd: Int32 = -1
            while stopped.wait(timeout: .now() + interval) == .timedOut {
                if fd < 0 { fd = (try? Syscalls.open(path, O_RDONLY | O_NOFOLLOW)) ?? -1 }
                if fd >= 0 { Syscalls.startWriteback(fd) }
            }
            if fd >= 0 { Syscalls.close(fd) }
        }
    }

    /// Stops the thread and waits for it.
    package func stop() {
        stopped.signal()
        thread.wait()
    }
}
