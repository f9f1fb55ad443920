import CBackstageDisk

/// The operations that change the disk, as the power-loss explorer's log names them.
enum DiskOperation: String {
    case create, write, fsync, syncfs, rename, link, symlink, unlink, rmdir, mkdir
}

#if BACKSTAGE_FAULT_INJECTION
    #if canImport(Glibc)
        import Glibc
    #endif
    import Foundation

    /// Test builds only: records every operation of this process that changes the disk, so the
    /// harness's power-loss explorer can build each state a power cut could leave (see
    /// `PowerCut` in BackstageHarness). Backstage's own operations are recorded here, from its one
    /// system-call layer; SQLite's by a VFS registered over the default one, in C
    /// (`Sources/CBackstageDisk`), in the same numbered log. A release build, the one users ship,
    /// has none of it.
    ///
    /// Switched on by the process's environment, read when it starts:
    /// - `BACKSTAGE_DISK_LOG=FILE`: one line per operation that succeeded, appended (never fsynced:
    ///   a SIGKILL keeps what the kernel has): `index<TAB>operation<TAB>path[<TAB>second field]`.
    /// - `BACKSTAGE_DISK_CUT=N`: the process kills itself with SIGKILL before operation `N` (from 0),
    ///   so operations `0..<N` are exactly those that ran.
    /// - `BACKSTAGE_DISK_STASH=DIR`: a hard link (or a copy across file systems) of every file an
    ///   operation unlinks or renames over, named by the operation's index, and the bytes each of
    ///   SQLite's writes replaced, so a power cut that undoes them can bring them back.
    /// - `BACKSTAGE_DISK_SKIP_FSYNC=TEXT`: folder fsyncs whose path ends with `TEXT` are not made
    ///   (nor recorded): the planted bug the explorer's own tests must find.
    enum DiskRecorder {
        private static let skipFsync = ProcessInfo.processInfo.environment["BACKSTAGE_DISK_SKIP_FSYNC"]

        /// Whether a recorder is on: the callers skip their extra `lstat` otherwise.
        static var isOn: Bool { backstage_disk_is_on() != 0 }

        /// True when the folder fsync of `path` is to be skipped (the planted bug).
        static func skipsFsync(of path: String) -> Bool {
            guard let skip = skipFsync, !skip.isEmpty, isOn else { return false }
            return path.hasSuffix(skip)
        }

        /// Runs `body`, one operation on the disk, and records it when it succeeds; the process is
        /// killed first when this is the cut. The file at `victim` (unlinked or renamed over) is
        /// stashed first.
        @inline(__always)
        static func recording<T>(
            _ operation: DiskOperation, _ path: String, _ second: String = "", victim: String? = nil,
            _ body: () throws(FileSystemError) -> T
        ) throws(FileSystemError) -> T {
            guard isOn else { return try body() }
            let index = backstage_disk_begin(victim)
            let result = try body()
            backstage_disk_done(index, operation.rawValue, path, second)
            return result
        }

        /// The path of an open file descriptor, for the kernel copies that only take descriptors.
        static func path(of fd: Int32) -> String {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "?"
        }
    }
#endif
