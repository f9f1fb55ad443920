/// How far an export or an import has come: a plain value, delivered through the event stream.
public struct ArchiveProgress: Sendable, Hashable, Codable {
    /// Entries written (export) or read (import) so far.
    public var entriesDone: Int
    /// Entries to write, when known (export knows; an archive does not say before it is read).
    public var entriesTotal: Int?
    /// Export: bytes of documents read. Import: bytes of the archive file read.
    public var bytesDone: Int64
    /// Export: bytes of documents to read. Import: the archive's size.
    public var bytesTotal: Int64

    public init(entriesDone: Int, entriesTotal: Int?, bytesDone: Int64, bytesTotal: Int64) {
        self.entriesDone = entriesDone
        self.entriesTotal = entriesTotal
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
    }

    /// Between 0 and 1.
    public var fraction: Double {
        bytesTotal > 0
            ? min(1, Double(bytesDone) / Double(bytesTotal))
            : (entriesTotal.map { $0 > 0 ? Double(entriesDone) / Double($0) : 1 } ?? 0)
    }
}

/// Decides when a progress event is worth sending: every 4 MiB or 256 entries, and at the end.
struct ProgressThrottle {
    private var lastBytes: Int64 = 0
    private var lastEntries = 0

    mutating func shouldReport(_ progress: ArchiveProgress) -> Bool {
        guard progress.bytesDone - lastBytes >= 4 << 20 || progress.entriesDone - lastEntries >= 256 else {
            return false
        }
        lastBytes = progress.bytesDone
        lastEntries = progress.entriesDone
        return true
    }
}
