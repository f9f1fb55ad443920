import Foundation

/// A small durable record of the step in progress, kept in `applicationSupport/.backstage/journal.json`.
///
/// It is written to a temporary file, fsynced, renamed over the old record and the folder
/// fsynced, so after a crash the next run reads either the old phase or the new one, never
/// a torn record, and finishes or undoes the step.
public struct UpgradeJournal: Sendable, Hashable, Codable {
    /// The format version.
    public var version: Int = 1
    /// The step in progress, such as `relocate`.
    public var step: String
    /// The last phase reached.
    public var phase: String
    /// Where the data comes from.
    public var source: ContainerLocation
    /// Where it goes.
    public var destination: ContainerLocation
    /// How it moves (`rename` or `copy`), when it applies.
    public var strategy: String?
    /// The stores a split produces, when it applies.
    public var targets: [ContainerLocation]?
    /// When the step started.
    public var startedAt: Date

    /// Creates a record.
    public init(step: String, phase: String, source: ContainerLocation, destination: ContainerLocation, strategy: String? = nil, targets: [ContainerLocation]? = nil, startedAt: Date = Date()) {
        self.step = step
        self.phase = phase
        self.source = source
        self.destination = destination
        self.strategy = strategy
        self.targets = targets
        self.startedAt = startedAt
    }
}

/// Reads and writes the ``UpgradeJournal`` of one container, durably.
struct JournalFile {
    let url: URL
    let fileSystem: FileSystem

    init(container: AppContainer, fileSystem: FileSystem) {
        self.url = container.backstageDirectory.appending(path: "journal.json")
        self.fileSystem = fileSystem
    }

    func read() throws(RelocationError) -> UpgradeJournal? {
        let bytes: [UInt8]
        do {
            guard try fileSystem.status(url.path) != nil else { return nil }
            bytes = try fileSystem.readFile(url.path)
        } catch {
            throw .fileSystem(error)
        }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(UpgradeJournal.self, from: Data(bytes))
        } catch {
            throw .unreadableJournal(path: url.path, reason: "\(error)")
        }
    }

    func write(_ journal: UpgradeJournal) throws(RelocationError) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = (try? encoder.encode(journal)) ?? Data()
        do {
            try fileSystem.createDirectories(url.deletingLastPathComponent().path)
            try fileSystem.writeAtomically(Array(data), to: url.path)
        } catch {
            throw .fileSystem(error)
        }
    }

    func clear() throws(RelocationError) {
        do {
            try fileSystem.removeFile(url.path)
            try fileSystem.syncDirectory(url.deletingLastPathComponent().path)
        } catch {
            throw .fileSystem(error)
        }
    }
}
