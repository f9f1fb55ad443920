import Foundation
import Synchronization

/// The operations that change the disk, as the power-loss explorer's log names them.
package enum DiskOperation: String, Sendable {
    case create, write, fsync, syncfs, rename, link, symlink, unlink, rmdir, mkdir
}

/// What records the operations of this process that change the disk: the power-loss explorer's
/// recorder, which the simulator's child (`backstage-simulate-child`) installs with
/// ``DiskRecording/install(_:)``. Every build has the hook and none has a recorder: a process that
/// installs none (every app) runs each operation as it is.
package protocol DiskRecorder: Sendable {
    /// Starts an operation and returns its index; may end the process first (the cut). `victim`:
    /// the file about to be unlinked or renamed over, to keep.
    func begin(victim: String?) -> Int
    /// Records operation `index` as done.
    func done(_ index: Int, _ operation: DiskOperation, path: String, second: String)
    /// True when the folder fsync of `path` is not to be made (a planted bug the explorer's own
    /// tests must find).
    func skipsFolderFsync(_ path: String) -> Bool
}

/// The one hook of the system-call layer (``Syscalls``) for a disk recorder: explicit, installed
/// by the process that wants it, never from the environment.
package enum DiskRecording {
    private static let installed = Mutex<(any DiskRecorder)?>(nil)

    /// Records every later disk operation of this process with `recorder`. Call it once, first
    /// thing, before any store is opened; a second call replaces the first recorder.
    package static func install(_ recorder: any DiskRecorder) {
        installed.withLock { $0 = recorder }
    }

    /// The recorder installed, if any.
    static var recorder: (any DiskRecorder)? { installed.withLock { $0 } }

    /// Whether a recorder is installed: the callers skip their extra `lstat` otherwise.
    static var isOn: Bool { recorder != nil }

    /// True when the folder fsync of `path` is to be skipped (the planted bug of a recorder).
    static func skipsFsync(of path: String) -> Bool {
        recorder?.skipsFolderFsync(path) ?? false
    }

    /// Runs `body`, one operation on the disk, and records it when it succeeds; the recorder may end
    /// the process first. The file at `victim` (unlinked or renamed over) is kept first.
    @inline(__always)
    static func recording<T>(
        _ operation: DiskOperation, _ path: String, _ second: String = "", victim: String? = nil,
        _ body: () throws(FileSystemError) -> T
    ) throws(FileSystemError) -> T {
        guard let recorder else { return try body() }
        let index = recorder.begin(victim: victim)
        let result = try body()
        recorder.done(index, operation, path: path, second: second)
        return result
    }

    /// The path of an open file descriptor, for the kernel copies that only take descriptors.
    static func path(of fd: Int32) -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "?"
    }
}
