import BackstageSystem
import Foundation

/// A boundary in one step of a relocation or an upgrade (a move, a split, a schema migration).
/// A crash between two boundaries is repaired by the next run; the journal records the last one
/// passed, and a crash test's `CrashPoint` (`relocate:committed@1`) names them.
public enum StepPhase: String, Sendable, Hashable, Codable, CaseIterable {
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
}

/// A kind of step an upgrade plan has: the key of its JSON object (`{"split": {...}}`), the name a
/// journal record and a crash point (`split:verified@1`) give it. Each kind is declared with its step,
/// in its folder of `Sources/Backstage/Steps` (`StepKind.split` in `Steps/Split`), and registered in
/// `Steps/StepKinds.swift`; this layer names none.
public struct StepKind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// In JSON, a kind is its name: `"split"`.
    public init(from decoder: Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
