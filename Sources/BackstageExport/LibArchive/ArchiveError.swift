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
