import Foundation

/// Writes a file to disk while it is filled: every `interval`, a background thread starts the
/// writeback of the pages dirtied so far (`sync_file_range`, which does not wait), or, when told to
/// commit, waits for them and for what reaches them (`fdatasync`). The fsync that makes the file
/// durable afterwards then has little left to write, and the disk works while the file is made, on
/// the second core. Advisory: nothing depends on it for durability, and its errors are the final
/// fsync's to report (each open file sees a writeback error).
package final class BackgroundWriteback: @unchecked Sendable {
    private let stopped = DispatchSemaphore(value: 0)
    private let thread = ThreadGroup()

    /// Starts the thread; the file need not exist yet.
    ///
    /// - parameter committing: `fdatasync` at each interval rather than only starting the
    ///   writeback. Started pages still leave the file's block allocation (ext4 allocates as it
    ///   writes back) to the final fsync's journal commit: an export's final fsync of its 94 MB
    ///   tar.zst waited 92–121 ms after `sync_file_range` every 30 ms, 3–7 ms after `fdatasync`.
    ///   SQLite's files (a split's store) keep the started writeback, which was measured with them.
    package init(path: String, interval: Double = 0.03, committing: Bool = false) {
        let stopped = self.stopped
        thread.start {
            var fd: Int32 = -1
            while stopped.wait(timeout: .now() + interval) == .timedOut {
                if fd < 0 { fd = (try? Syscalls.open(path, O_RDONLY | O_NOFOLLOW)) ?? -1 }
                if fd >= 0 { _ = committing ? Syscalls.commitData(fd) : Syscalls.startWriteback(fd) }
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
