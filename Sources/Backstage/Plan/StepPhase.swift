import Foundation

/// A boundary in one step of a relocation or an upgrade (a move, a split, a schema migration).
/// A crash between two boundaries is repaired by the next run; the journal records the last one
/// passed, and `--crash-at` names them.
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

    /// The boundaries a split passes, in order.
    public static let splitBoundaries: [StepPhase] = [
        .preflight, .journaled, .locked, .copying, .copied, .verified, .committed, .sourceRemoved, .done,
    ]
    /// The boundaries a schema migration passes, in order.
    public static let migrationBoundaries: [StepPhase] = [.journaled, .locked, .migrating, .migrated, .done]

    /// The boundaries a move with `strategy` passes, in order.
    public static func boundaries(for strategy: RelocationStrategy) -> [StepPhase] {
        switch strategy {
        case .copy:
            [
                .preflight, .journaled, .locked, .copying, .copied, .verified, .committed, .supportMoved,
                .sourceRemoved, .done,
            ]
        case .rename, .auto: [.preflight, .journaled, .locked, .committed, .supportMoved, .sourceRemoved, .done]
        }
    }
}

/// The kinds of step an upgrade plan has; a journal names the one in progress.
public enum StepKind: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case relocate, split, migrateSchema, quarantine

    public var description: String { rawValue }
}
