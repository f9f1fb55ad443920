import CArchive

/// A libarchive failure: its code, its message, the archive and the entry it was working on.
public struct ArchiveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// libarchive's return code (`ARCHIVE_FATAL` = -30, `ARCHIVE_FAILED` = -25, ...) or errno.
    public var code: Int32
    public var message: String
    /// The archive file.
    public var archivePath: String
    /// The entry being written or read, when there was one.
    public var entryPath: String?

    public init(code: Int32, message: String, archivePath: String, entryPath: String? = nil) {
        self.code = code
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
