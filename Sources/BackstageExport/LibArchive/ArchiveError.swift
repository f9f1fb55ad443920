import Backstage
import CArchive

/// A failure reading or writing an archive: what failed, in words, the archive and the entry.
///
/// Who failed is in ``cause``; libarchive's status and the system's `errno` are apart, each in
/// its own field. A full disk under libarchive, for example, reads:
///
/// ```swift
/// error.cause   // .libarchive
/// error.status  // ARCHIVE_FATAL
/// error.errno   // ENOSPC
/// ```
public struct ArchiveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A status a libarchive call returned, as it returned it (see `archive.h`).
    public struct Status: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `ARCHIVE_WARN`: the call partly succeeded (the entry was read or written with a loss).
        public static let warn = Status(rawValue: ARCHIVE_WARN)
        /// `ARCHIVE_FAILED`: this entry failed; the archive can still be used.
        public static let failed = Status(rawValue: ARCHIVE_FAILED)
        /// `ARCHIVE_FATAL`: the archive can no longer be used.
        public static let fatal = Status(rawValue: ARCHIVE_FATAL)

        public var description: String {
            switch rawValue {
            case ARCHIVE_EOF: "ARCHIVE_EOF"
            case ARCHIVE_OK: "ARCHIVE_OK"
            case ARCHIVE_RETRY: "ARCHIVE_RETRY"
            case ARCHIVE_WARN: "ARCHIVE_WARN"
            case ARCHIVE_FAILED: "ARCHIVE_FAILED"
            case ARCHIVE_FATAL: "ARCHIVE_FATAL"
            default: "libarchive status \(rawValue)"
            }
        }
    }

    /// Who failed.
    public enum Cause: Sendable, Hashable {
        /// libarchive reported the failure (its ``ArchiveError/status``, and the ``ArchiveError/errno``
        /// it recorded when a system call failed under it).
        case libarchive
        /// A file-system call Backstage made itself, on the archive or on a scratch file, failed.
        case fileSystem(FileSystemError)
        /// zlib returned `code` (`Z_MEM_ERROR`, `Z_DATA_ERROR`...).
        case zlib(code: Int32)
        /// libzstd returned the error `code` (`ZSTD_getErrorCode`: 64 memory allocation, 42
        /// parameter out of bound...).
        case zstd(code: Int32)
        /// The archive's bytes break its format where Backstage checks them itself, after
        /// libarchive (a tar cut after an entry, a gzip trailer that does not match).
        case damaged
        /// libarchive could not allocate a handle or an entry: memory ran out.
        case outOfMemory
        /// Backstage's own assembly of the archive found its parts inconsistent (a writer's
        /// central directory, a scratch file shorter than what was put in it): a defect of
        /// Backstage, not of the documents.
        case inconsistent
        /// This part of the work stopped because another part failed or the export was cancelled;
        /// the failure reported is that other part's.
        case stopped
        /// An option the caller gave is out of range (a zip compression level outside 0 to 9).
        case invalidOption
    }

    /// Who failed.
    public var cause: Cause
    /// The status the libarchive call returned, when the failure surfaced through one (also when
    /// the cause was Backstage's: a full disk under libarchive's write callback returns
    /// ``Status/fatal``); nil otherwise.
    public var status: Status?
    /// The system's error number (`ENOSPC`, `EIO`...), whoever met it; nil when there was none
    /// (a format error, memory, a defect).
    public var errno: Int32?
    /// What failed, in words.
    public var message: String
    /// The archive file.
    public var archivePath: String
    /// The entry being written or read, when there was one.
    public var entryPath: String?

    /// An error; `errno` is the file-system error's own when `cause` is one and none is given.
    public init(
        cause: Cause, status: Status? = nil, errno: Int32? = nil, message: String, archivePath: String,
        entryPath: String? = nil
    ) {
        self.cause = cause
        self.status = status
        if case .fileSystem(let error) = cause {
            self.errno = errno ?? error.code
        } else {
            self.errno = errno
        }
        self.message = message
        self.archivePath = archivePath
        self.entryPath = entryPath
    }

    public var description: String {
        if let entryPath { return "\(archivePath): \(entryPath): \(message)" }
        return "\(archivePath): \(message)"
    }
}

extension ArchiveError {
    /// libarchive's message made a sentence a user can act on; its own text is kept after it.
    static func sentence(for message: String?, status: Int32) -> String {
        guard let message, !message.isEmpty else {
            return status == ARCHIVE_WARN ? "the archive is damaged" : "the archive is damaged or truncated"
        }
        let lower = message.lowercased()
        if lower.contains("truncated") || lower.contains("premature end") || lower.contains("unexpected end")
            || lower.contains("ends early")
        {
            return message.hasPrefix("the archive") ? message : "the archive is truncated (\(message))"
        }
        if lower.contains("crc") || lower.contains("checksum") {
            return message.hasPrefix("the archive")
                ? message : "the archive is corrupt: a checksum does not match (\(message))"
        }
        if lower.contains("unrecognized archive format") {
            return "this is not an archive Backstage can read (\(message))"
        }
        return message
    }
}
