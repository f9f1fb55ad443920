import Foundation

/// How a store moves.
public enum RelocationStrategy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Rename on one file system, copy across file systems.
    case auto
    /// `rename(2)`: O(1) whatever the size; fails across file systems.
    case rename
    /// Kernel copy under the lock, verify, then switch.
    case copy
}

/// A boundary in the move of one store. A crash between two boundaries is repaired by the next run.
public enum RelocationPhase: String, Sendable, Hashable, Codable, CaseIterable {
    /// The checks passed; nothing has changed yet.
    case preflight
    /// The journal names the move; the source is still authoritative.
    case journaled
    /// SQLite's exclusive lock is held; the WAL is checkpointed and any hot journal rolled back.
    case locked
    /// Copy only: the first bytes reached the temporary file.
    case copying
    /// Copy only: the temporary files are complete and fsynced.
    case copied
    /// Copy only: the temporary files match the source byte for byte.
    case verified
    /// The database is at the destination: from here on the destination is authoritative.
    case committed
    /// The Core Data support folder is at the destination.
    case supportMoved
    /// Nothing of the store is left at the source.
    case sourceRemoved
    /// Migrate only: at least one migration was applied (each in its own transaction).
    case migrating
    /// Migrate only: every migration is applied and recorded.
    case migrated
    /// The journal is cleared.
    case done

    /// The boundaries a split passes, in order.
    public static let splitBoundaries: [RelocationPhase] = [.preflight, .journaled, .locked, .copying, .copied, .verified, .committed, .sourceRemoved, .done]
    /// The boundaries a schema migration passes, in order.
    public static let migrationBoundaries: [RelocationPhase] = [.journaled, .locked, .migrating, .migrated, .done]

    /// The boundaries a move with `strategy` passes, in order.
    public static func boundaries(for strategy: RelocationStrategy) -> [RelocationPhase] {
        switch strategy {
        case .copy: [.preflight, .journaled, .locked, .copying, .copied, .verified, .committed, .supportMoved, .sourceRemoved, .done]
        case .rename, .auto: [.preflight, .journaled, .locked, .committed, .supportMoved, .sourceRemoved, .done]
        }
    }
}

/// Progress of a relocation, delivered while it runs.
public struct RelocationProgress: Sendable, Hashable {
    /// The store being moved (its path relative to Documents).
    public var store: String
    /// The last boundary passed.
    public var phase: RelocationPhase
    /// Bytes copied or verified so far (0 for a rename).
    public var bytesDone: Int64
    /// Bytes to copy and verify (0 for a rename).
    public var bytesTotal: Int64

    /// The fraction done, from 0 to 1.
    public var fractionCompleted: Double {
        if phase == .done { return 1 }
        return bytesTotal > 0 ? min(1, Double(bytesDone) / Double(bytesTotal)) : 0
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
    }

    /// A file taken out of Documents but kept.
    public struct QuarantinedFile: Sendable, Hashable, Codable {
        public var from: String
        public var to: String
        /// Why: `orphan-sidecar`, `conflict`, `stale-destination`, `backstage-temporary`, ...
        public var reason: String
    }

    /// Stores moved.
    public var moved: [MovedStore] = []
    /// Files moved to `applicationSupport/.backstage/quarantine/<timestamp>/`.
    public var quarantined: [QuarantinedFile] = []
    /// Interrupted moves found in the journal and finished (`completed`) or undone (`rolled back`).
    public var recovered: [String] = []

    /// True when there was nothing to move, quarantine or recover.
    public var nothingToDo: Bool { moved.isEmpty && quarantined.isEmpty && recovered.isEmpty }

    public init() {}
}

/// An event of a relocation stream: progress, then the final report.
public enum RelocationEvent: Sendable {
    case progress(RelocationProgress)
    case finished(RelocationReport)
}
