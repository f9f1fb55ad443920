import BackstageSystem
import Foundation

/// Progress of a relocation, delivered while it runs.
public struct RelocationProgress: Sendable, Hashable {
    /// The store being moved (its path relative to Documents).
    public var store: String
    /// The last boundary passed.
    public var phase: StepPhase
    /// Bytes copied or verified so far (0 for a rename).
    public var bytesDone: Int64
    /// Bytes to copy and verify (0 for a rename).
    public var bytesTotal: Int64

    /// The fraction done, from 0 to 1.
    public var fractionCompleted: Double {
        if phase == .done { return 1 }
        return bytesTotal > 0 ? min(1, Double(bytesDone) / Double(bytesTotal)) : 0
    }

    package init(store: String, phase: StepPhase, bytesDone: Int64, bytesTotal: Int64) {
        self.store = store
        self.phase = phase
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
    }
}

/// Something a relocation did that may surprise, although nothing was lost.
public enum RelocationWarning: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The database had other hard links: they still name the old file (now a copy, or the moved
    /// file's other name), and writes through them no longer reach the moved store.
    case hardLinked(path: String, links: Int)

    public var description: String {
        switch self {
        case .hardLinked(let path, let links):
            "\(path) had \(links) hard links; the other names still point at the old data, not at the moved store"
        }
    }
}

/// Why a file went to quarantine (`applicationSupport/.backstage/quarantine/<timestamp>/`).
public enum QuarantineReason: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// A `-wal`, `-shm` or `-journal` whose database is gone.
    case orphanSidecar = "orphan-sidecar"
    /// A Core Data support folder without its store.
    case orphanSupportFolder = "core-data-support"
    /// A temporary a crashed Backstage left.
    case backstageTemporary = "backstage-temporary"
    /// The store was in both places; the destination's was kept, this one set aside.
    case conflict
    /// A sidecar or support folder where a store was about to be created (SQLite would splice it in).
    case staleDestination = "stale-destination"
    /// A non-empty sidecar left after a store's lock was released.
    case leftoverSidecar = "leftover-sidecar"
    /// External data no row of a split's targets refers to.
    case unreferencedExternalData = "unreferenced-external-data"
    /// What a killed import had set aside or staged.
    case interruptedImport = "interrupted-import"

    public var description: String { rawValue }
}

/// What a relocation did.
public struct RelocationReport: Sendable, Hashable, Codable {
    /// A store that now lives at its destination.
    public struct MovedStore: Sendable, Hashable, Codable {
        /// The store's path relative to its source root.
        public var store: String
        public var from: String
        public var to: String
        /// The strategy used: `rename` or `copy`.
        public var strategy: RelocationStrategy
        /// The files that moved: database and support files for a copy; for a rename, the database
        /// and the support folder as one entry (counting its files would cost a walk of all of them).
        public var files: Int
        /// Bytes moved: everything copied for a copy; the database for a rename.
        public var bytes: Int64
        /// Wall time of the move.
        public var seconds: Double
        /// What the user should know although the move succeeded.
        public var warnings: [RelocationWarning] = []

        package init(
            store: String, from: String, to: String, strategy: RelocationStrategy, files: Int, bytes: Int64,
            seconds: Double, warnings: [RelocationWarning] = []
        ) {
            self.store = store
            self.from = from
            self.to = to
            self.strategy = strategy
            self.files = files
            self.bytes = bytes
            self.seconds = seconds
            self.warnings = warnings
        }
    }

    /// A file taken out of Documents but kept.
    public struct QuarantinedFile: Sendable, Hashable, Codable {
        public var from: String
        public var to: String
        public var reason: QuarantineReason

        package init(from: String, to: String, reason: QuarantineReason) {
            self.from = from
            self.to = to
            self.reason = reason
        }
    }

    /// Stores moved.
    public var moved: [MovedStore] = []
    /// Files moved to `applicationSupport/.backstage/quarantine/<timestamp>/`.
    public var quarantined: [QuarantinedFile] = []
    /// Interrupted moves found in the journal and finished (`completed`) or undone (`rolled back`).
    public var recovered: [String] = []
    /// Databases of the source folder left where they are because the app did not declare them
    /// (``AppContainer/declaredStores``) and they were not named: the user's documents.
    public var leftUndeclared: [String] = []

    /// A store named to move (`RelocationOptions.stores`) that matches no file of the source folder:
    /// a fresh install has none yet, or the name is mistyped.
    public struct UnmatchedName: Sendable, Hashable, Codable {
        /// The name or pattern as given.
        public var name: String
        /// The database of the source folder whose name is a few letters from it, if one is.
        public var closest: String?

        package init(name: String, closest: String? = nil) {
            self.name = name
            self.closest = closest
        }
    }

    /// Names that matched no store: nothing moved for them, and nothing failed (an app that declares
    /// its store at every launch has none on its first).
    public var unmatched: [UnmatchedName] = []

    /// True when there was nothing to move, quarantine or recover.
    public var nothingToDo: Bool { moved.isEmpty && quarantined.isEmpty && recovered.isEmpty }

    public init() {}
}

/// An event of a relocation stream: progress, then the final report.
public enum RelocationEvent: Sendable {
    case progress(RelocationProgress)
    case finished(RelocationReport)
}
