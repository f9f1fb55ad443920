import Foundation

/// A failed file-system call: the operation, the path it was given and the `errno` it returned.
///
/// For example, writing to a full disk gives:
///
/// ```swift
/// FileSystemError(operation: .write, path: "/data/Notes.sqlite", code: ENOSPC)
/// // cannot write /data/Notes.sqlite: No space left on device
/// ```
public struct FileSystemError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The system call that failed.
    public enum Operation: String, Sendable, Hashable {
        case open, read, write, fsync, rename, copy, unlink, mkdir, rmdir, stat, statfs, lock, readlink, list, link,
            symlink
        case setAttributes = "set attributes of"
    }

    /// The system call that failed.
    public var operation: Operation
    /// The path the call was given.
    public var path: String
    /// The `errno` value.
    public var code: Int32

    /// Creates an error.
    public init(operation: Operation, path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// True when the disk or the quota is full (`ENOSPC`, `EDQUOT`).
    public var isOutOfSpace: Bool { code == ENOSPC || code == EDQUOT }
    /// True when the file system is mounted read-only or the path is not writable.
    public var isReadOnly: Bool { code == EROFS || code == EACCES || code == EPERM }
    /// True when the two paths are on different file systems (`EXDEV`).
    public var isCrossDevice: Bool { code == EXDEV }

    /// The system's message for ``code``, such as "No space left on device".
    public var reason: String { String(cString: strerror(code)) }

    public var description: String { "cannot \(operation.rawValue) \(path): \(reason)" }
}
