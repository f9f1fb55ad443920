import Foundation

/// The state an old app version left its container in.
public enum FixtureState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Every store written and closed normally.
    case clean
    /// The writer was killed before a checkpoint: its last committed rows live only in `-wal`.
    case walPending = "wal-pending"
    /// A rollback-journal writer was killed mid-transaction: a hot journal beside the store.
    case hotJournal = "hot-journal"
    /// The store is in Documents and in Application Support (a backup restored over an upgraded app).
    case bothLocations = "both-locations"
    /// An upgrade into this version was killed mid-step: the journal names the step in progress.
    case interrupted
    /// `-wal` and `-shm` files in Documents whose database is gone.
    case orphanSidecars = "orphan-sidecars"
}

/// What to generate.
public struct FixtureSpec: Sendable, Hashable, Codable {
    /// The catalog version whose layout to build.
    public var layout: String
    /// Approximate bytes of the stores and their external data (user documents not counted).
    public var size: Int64
    public var state: FixtureState
    public var seed: UInt64

    public init(layout: String, size: Int64, state: FixtureState, seed: UInt64) {
        self.layout = layout
        self.size = size
        self.state = state
        self.seed = seed
    }

    /// Parses `500KB`, `2MB`, `1.5GB` or a number of bytes (decimal units).
    public static func parseSize(_ text: String) -> Int64? {
        let units: [(String, Double)] = [
            ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("B", 1),
        ]
        let upper = text.uppercased().trimmingCharacters(in: .whitespaces)
        for (suffix, factor) in units where upper.hasSuffix(suffix) {
            guard let value = Double(upper.dropLast(suffix.count)), value > 0 else { return nil }
            return Int64(value * factor)
        }
        return Int64(upper).flatMap { $0 > 0 ? $0 : nil }
    }
}

/// What a generated container holds: per store, per table row counts and content hashes; user
/// documents and their hashes. Two containers with equal manifests hold the same data.
public struct FixtureManifest: Sendable, Hashable, Codable {
    public struct Document: Sendable, Hashable, Codable {
        public var path: String
        public var bytes: Int64
        public var sha256: String
    }
    public var spec: FixtureSpec
    /// Rows of the app's main table in the store it writes to.
    public var rows: Int
    /// Table digests by store location (`"documents/Notes.sqlite"`).
    public var stores: [String: [String: TableDigest]]
    /// Regular files under Documents, internal ones excluded, in path order.
    public var documents: [Document]
    /// Empty folders under Documents.
    public var emptyFolders: [String]
}
