import Backstage
import Foundation

/// The durable record of an import moving its staged tree into Documents, kept in
/// `applicationSupport/.backstage/import.json` from before the first move until the staging
/// folder is gone, so that an import killed halfway is finished or undone by the next one.
///
/// It names the staging folder, and for each entry moved in its path in Documents, its path in the
/// staging folder, the inode it had there (a rename keeps it), and for a file it replaces the inode
/// of the original, which is set aside under its own name (``setAsideFolder``) before the record is
/// written. Every staged byte and every set-aside link is made durable (`syncfs`) before the record
/// says ``Phase/staged``.
struct ImportJournal: Codable, Hashable {
    /// The newest format this version reads and writes; a newer one is refused, never guessed at.
    static let currentVersion = 1

    /// How far the move-in got, which decides what a recovery does.
    enum Phase: String, Codable, Hashable {
        /// Everything staged, durable and decided; entries are being moved in. A recovery completes
        /// the move-in, or undoes it when completing would overwrite what someone wrote since.
        case staged
        /// The move-in is being undone (it failed, or could not be completed): a recovery goes on undoing.
        case undoing
        /// Every entry is in Documents, durably: a recovery only removes the staging folder.
        case movedIn = "moved-in"
    }

    /// One rename into Documents.
    struct Entry: Codable, Hashable {
        /// Where it goes, relative to Documents.
        var path: String
        /// Where it is staged, relative to the staging folder.
        var staged: String
        /// The staged file's (or folder's) inode: still its inode once renamed into Documents.
        var inode: UInt64
        /// The inode of the file it replaces, set aside under its own name; nil when it replaces nothing.
        var original: UInt64?
    }

    var version = Self.currentVersion
    var phase: Phase
    /// The archive being imported.
    var archive: String
    /// The staging folder (absolute).
    var staging: String
    var entries: [Entry]
    var startedAt: Date

    /// Where replaced originals are set aside, under their own paths, inside the staging folder.
    /// Its name carries Backstage's temporary marker, which no imported entry may have.
    static let setAsideFolder = TemporaryName.beside("replaced")

    /// The set-aside original of `entry`: `<staging>/.replaced.backstage-tmp/<path in Documents>`.
    func setAside(_ entry: Entry) -> String { staging + "/" + Self.setAsideFolder + "/" + entry.path }

    /// The staged copy of `entry`.
    func staged(_ entry: Entry) -> String { staging + "/" + entry.staged }
}

/// Why a recovery refused the import journal it found: finishing a journal it cannot read could
/// undo, or complete, the wrong thing.
public struct ImportJournalError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the record.
    public enum Reason: Sendable, Hashable {
        /// It cannot be decoded (empty, cut short, not this format).
        case unreadable(String)
        /// A newer Backstage wrote it, in a format this version does not know.
        case newerFormat(version: Int, supported: Int)
        /// Its staging folder is not one an import of this container makes.
        case foreignStaging(String)
    }

    /// The journal, `applicationSupport/.backstage/import.json`.
    public var journalPath: String
    public var reason: Reason

    public init(journalPath: String, reason: Reason) {
        self.journalPath = journalPath
        self.reason = reason
    }

    public var description: String {
        let why =
            switch reason {
            case .unreadable(let detail): "it cannot be read (\(detail))"
            case .newerFormat(let version, let supported):
                "it is in format \(version), and this version of Backstage reads up to \(supported)"
            case .foreignStaging(let path): "its staging folder \(path) is not one an import of this container makes"
            }
        return
            "\(journalPath): the record of an interrupted import: \(why); nothing was changed, move it away to import"
    }
}

/// Reads and writes a container's ``ImportJournal``, durably (temporary file, fsync, rename, fsync
/// of the folder).
struct ImportJournalFile {
    let path: String
    let fileSystem: FileSystem

    init(container: AppContainer, fileSystem: FileSystem) {
        self.path = container.backstageDirectory.appending(path: "import.json").path
        self.fileSystem = fileSystem
    }

    var exists: Bool { fileSystem.exists(path) }

    /// The journal, or nil when no import is in progress.
    func read() throws -> ImportJournal? {
        guard try fileSystem.status(path) != nil else { return nil }
        let bytes = try fileSystem.readFile(path)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        struct Version: Decodable { var version: Int }
        guard let version = try? decoder.decode(Version.self, from: Data(bytes)).version else {
            throw ImportJournalError(
                journalPath: path, reason: .unreadable(bytes.isEmpty ? "it is empty" : "it has no format version"))
        }
        guard version <= ImportJournal.currentVersion else {
            throw ImportJournalError(
                journalPath: path,
                reason: .newerFormat(version: version, supported: ImportJournal.currentVersion))
        }
        do {
            return try decoder.decode(ImportJournal.self, from: Data(bytes))
        } catch {
            throw ImportJournalError(journalPath: path, reason: .unreadable("\(error)"))
        }
    }

    func write(_ journal: ImportJournal) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(journal)
        try fileSystem.createDirectories((path as NSString).deletingLastPathComponent)
        try fileSystem.writeAtomically(Array(data), to: path)
    }

    func clear() throws {
        try fileSystem.removeFile(path)
        try fileSystem.syncDirectory((path as NSString).deletingLastPathComponent)
    }
}

/// A point of an import's move-in where a crash test kills it (the `crashAt` of a
/// `backstage-simulate-child` import request): `journaled` (the journal written, nothing moved), `moved:N` (N entries moved in),
/// `moved-in` (every entry in, the staging folder not yet removed), `staging-removed` (the staging
/// folder gone, the journal not yet).
package enum ImportBoundary: Hashable, Sendable, LosslessStringConvertible {
    case journaled
    case moved(Int)
    case movedIn
    case stagingRemoved

    package init?(_ text: String) {
        switch text {
        case "journaled": self = .journaled
        case "moved-in": self = .movedIn
        case "staging-removed": self = .stagingRemoved
        default:
            guard text.hasPrefix("moved:"), let count = Int(text.dropFirst(6)), count >= 1 else { return nil }
            self = .moved(count)
        }
    }

    package var description: String {
        switch self {
        case .journaled: "journaled"
        case .moved(let count): "moved:\(count)"
        case .movedIn: "moved-in"
        case .stagingRemoved: "staging-removed"
        }
    }
}
