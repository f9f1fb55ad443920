import BackstageModel
import BackstageSystem
import Foundation

/// A small durable record of the step in progress, kept in `applicationSupport/.backstage/journal.json`.
///
/// It is written to a temporary file, fsynced, renamed over the old record and the folder
/// fsynced, so after a crash the next run reads either the old phase or the new one, never
/// a torn record, and finishes or undoes the step.
public struct UpgradeJournal: Sendable, Hashable, Codable {
    /// The newest format this version of Backstage reads and writes. A record is written in format 1
    /// unless it needs what format 2 added (``externalDataTarget``): a Backstage that knows only
    /// format 1 refuses it rather than finish a split without the external data that moved with it.
    /// Format 3 adds the stamp of the source a split verified (`verifiedSource`): a Backstage that
    /// knows only format 2 refuses it rather than remove a source it would not re-check.
    public static let currentVersion = 3

    /// The format version.
    public var version: Int = 1
    /// The step in progress.
    public var step: StepKind
    /// The last boundary passed.
    public var phase: StepPhase
    /// Where the data comes from.
    public var source: ContainerLocation
    /// Where it goes.
    public var destination: ContainerLocation
    /// How it moves, for a relocation.
    public var strategy: RelocationStrategy?
    /// The stores a split produces, when it applies.
    public var targets: [ContainerLocation]?
    /// The split target whose support folder receives the source's whole `_EXTERNAL_DATA` folder,
    /// in one rename when the split commits (format 2).
    public var externalDataTarget: ContainerLocation? {
        didSet { if externalDataTarget != nil { version = max(version, 2) } }
    }
    /// What the source was when the step verified what it built from it, under its lock (format 3):
    /// a recovery removes the source only when it still is that (``StoreStamp``).
    var verifiedSource: StoreStamp? {
        didSet { if verifiedSource != nil { version = max(version, 3) } }
    }
    /// When the step started.
    public var startedAt: Date

    /// Creates a record.
    public init(
        step: StepKind, phase: StepPhase, source: ContainerLocation, destination: ContainerLocation,
        strategy: RelocationStrategy? = nil, targets: [ContainerLocation]? = nil, startedAt: Date = Date()
    ) {
        self.step = step
        self.phase = phase
        self.source = source
        self.destination = destination
        self.strategy = strategy
        self.targets = targets
        self.startedAt = startedAt
    }

    /// The same record at a later boundary.
    func with(phase: StepPhase) -> UpgradeJournal {
        var copy = self
        copy.phase = phase
        return copy
    }
}

/// Reads and writes the ``UpgradeJournal`` of one container, durably.
package struct JournalFile {
    let url: URL
    let fileSystem: FileSystem
    /// The launch record, which promises that no journal is beside it (``LaunchRecord``).
    private let launchRecord: String

    init(container: AppContainer, fileSystem: FileSystem) {
        self.url = container.backstageDirectory.appending(path: "journal.json")
        self.fileSystem = fileSystem
        self.launchRecord = container.launchRecordPath
    }

    /// The journal, or nil when no step is in progress. A journal of a newer format, or naming a
    /// step or phase this version does not know, is refused: finishing it with the wrong rules
    /// could undo a committed step.
    func read() throws(BackstageError) -> UpgradeJournal? {
        let bytes: [UInt8]
        do {
            guard try fileSystem.status(url.path) != nil else { return nil }
            bytes = try fileSystem.readFile(url.path)
        } catch {
            throw BackstageError(.system(error), path: error.path, during: .journaling)
        }
        struct Version: Decodable { var version: Int }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let version: Int
        do {
            version = try decoder.decode(Version.self, from: Data(bytes)).version
        } catch {
            throw BackstageError(
                .unreadableJournal(reason: bytes.isEmpty ? "it is empty" : "it has no format version"), path: url.path,
                during: .journaling)
        }
        guard version <= UpgradeJournal.currentVersion else {
            throw BackstageError(
                .newerJournal(version: version, supported: UpgradeJournal.currentVersion), path: url.path,
                during: .journaling)
        }
        do {
            return try decoder.decode(UpgradeJournal.self, from: Data(bytes))
        } catch DecodingError.dataCorrupted(let context) {
            throw BackstageError(
                .unreadableJournal(
                    reason:
                        "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"),
                path: url.path, during: .journaling)
        } catch {
            throw BackstageError(.unreadableJournal(reason: "\(error)"), path: url.path, during: .journaling)
        }
    }

    func write(_ journal: UpgradeJournal) throws(BackstageError) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data: Data
        do {
            data = try encoder.encode(journal)
        } catch {
            // Never write a record that does not say what is in progress.
            throw BackstageError(
                .unreadableJournal(reason: "it could not be encoded: \(error)"), path: url.path, during: .journaling)
        }
        do {
            try withdrawLaunchRecord()
            try fileSystem.createDirectories(url.deletingLastPathComponent().path)
            try fileSystem.writeAtomically(Array(data), to: url.path)
        } catch {
            throw BackstageError(.system(error), path: error.path, during: .journaling)
        }
    }

    /// The rule between the journal and the launch record, owned here: a launch record of format 2
    /// promises that no journal is beside it. So the launch record goes before a journal's first
    /// write, durably (the run that completes writes it again), and a record may make the promise
    /// only when no journal is there (``mayPromiseNoJournal(in:fileSystem:)``).
    private func withdrawLaunchRecord() throws(FileSystemError) {
        guard fileSystem.exists(launchRecord) else { return }
        try fileSystem.removeFile(launchRecord)
        try fileSystem.syncDirectory((launchRecord as NSString).deletingLastPathComponent)
    }

    /// True when a journal waits in `container`: a step in progress, or one a crash interrupted.
    /// One `lstat` of a path the container keeps built: the launch check's.
    package static func isWaiting(in container: AppContainer, fileSystem: FileSystem) -> Bool {
        fileSystem.exists(container.journalPath)
    }

    /// True when a launch record written now may promise that no journal is beside it: none is.
    package static func mayPromiseNoJournal(in container: AppContainer, fileSystem: FileSystem) -> Bool {
        !isWaiting(in: container, fileSystem: fileSystem)
    }

    /// True when a journal may wait beside a launch record that does (`promised`) or does not
    /// promise there is none: the launch check looks for it only when the record does not.
    package static func mayWait(
        in container: AppContainer, besideRecordThatPromised promised: Bool, fileSystem: FileSystem
    )
        -> Bool
    {
        !promised && isWaiting(in: container, fileSystem: fileSystem)
    }

    /// Removes the temporary a write killed before its rename left (the record itself is intact).
    func removeStaleTemporary() throws(BackstageError) {
        let temporary = url.deletingLastPathComponent().appending(path: TemporaryName.beside(url.lastPathComponent))
            .path
        do { try fileSystem.removeFile(temporary) } catch {
            throw BackstageError(.system(error), path: error.path, during: .journaling)
        }
    }

    func clear() throws(BackstageError) {
        do {
            try fileSystem.removeFile(url.path)
            try fileSystem.syncDirectory(url.deletingLastPathComponent().path)
        } catch {
            throw BackstageError(.system(error), path: error.path, during: .journaling)
        }
    }
}
