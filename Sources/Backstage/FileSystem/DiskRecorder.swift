/// The operations that change the disk, as the power-loss explorer's log names them.
enum DiskOperation: String {
    case create, write, fsync, syncfs, rename, link, symlink, unlink, rmdir, mkdir
}

#if BACKSTAGE_FAULT_INJECTION
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Test builds only: records every operation of this process that changes the disk, so the
/// harness's power-loss explorer can build each state a power cut could leave (see
/// `PowerCut` in BackstageHarness). A release build, the one users ship, has none of it.
///
/// Switched on by the process's environment, read once:
/// - `BACKSTAGE_DISK_LOG=FILE`: one line per operation that succeeded, appended (never fsynced:
///   a SIGKILL keeps what the kernel has): `index<TAB>operation<TAB>path[<TAB>second path]`.
/// - `BACKSTAGE_DISK_CUT=N`: the process kills itself with SIGKILL before operation `N` (from 0),
///   so operations `0..<N` are exactly those that ran.
/// - `BACKSTAGE_DISK_STASH=DIR`: a hard link (or a copy across file systems) of every file an
///   operation unlinks or renames over, named by the operation's index, so a power cut that
///   undoes the unlink can bring the file back.
/// - `BACKSTAGE_DISK_SKIP_FSYNC=TEXT`: folder fsyncs whose path ends with `TEXT` are not made
///   (nor recorded): the planted bug the explorer's own tests must find.
enum DiskRecorder {
    private struct Settings: Sendable {
        var log: Int32
        var cut: Int?
        var stash: String?
        var skipFsync: String?
    }

    private static let settings: Settings? = {
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment["BACKSTAGE_DISK_LOG"] else { return nil }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return nil }
        return Settings(
            log: fd, cut: environment["BACKSTAGE_DISK_CUT"].flatMap(Int.init),
            stash: environment["BACKSTAGE_DISK_STASH"], skipFsync: environment["BACKSTAGE_DISK_SKIP_FSYNC"])
    }()

    private static let next = Mutex(0)

    /// Whether a recorder is on: the callers skip their extra `lstat` otherwise.
    static var isOn: Bool { settings != nil }

    /// True when the folder fsync of `path` is to be skipped (the planted bug).
    static func skipsFsync(of path: String) -> Bool {
        guard let skip = settings?.skipFsync, !skip.isEmpty else { return false }
        return path.hasSuffix(skip)
    }

    /// Runs `body`, one operation on the disk, and records it when it succeeds; kills the
    /// process first when this is the cut. The file at `victim` (unlinked or renamed over) is
    /// stashed first.
    @inline(__always)
    static func recording<T>(
        _ operation: DiskOperation, _ path: String, _ second: String = "", victim: String? = nil,
        _ body: () throws(FileSystemError) -> T
    ) throws(FileSystemError) -> T {
        guard let settings else { return try body() }
        let index = next.withLock { value in
            defer { value += 1 }
            return value
        }
        if index == settings.cut { kill(getpid(), SIGKILL) }
        if let victim, let stash = settings.stash { keep(victim, in: stash, as: index) }
        let result = try body()
        var line = "\(index)\t\(operation.rawValue)\t\(escaped(path))"
        if !second.isEmpty { line += "\t\(escaped(second))" }
        line += "\n"
        _ = line.withCString { Glibc.write(settings.log, $0, strlen($0)) }
        return result
    }

    /// The path of an open file descriptor, for the kernel copies that only take descriptors.
    static func path(of fd: Int32) -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "?"
    }

    private static func keep(_ path: String, in stash: String, as index: Int) {
        var st = stat()
        guard Glibc.lstat(path, &st) == 0, (st.st_mode & S_IFMT) != S_IFDIR else { return }
        let kept = "\(stash)/\(index)"
        if Glibc.link(path, kept) != 0 { try? FileManager.default.copyItem(atPath: path, toPath: kept) }
    }

    private static func escaped(_ path: String) -> String {
        path.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\t", with: "%09")
            .replacingOccurrences(of: "\n", with: "%0A")
    }
}
#endif
