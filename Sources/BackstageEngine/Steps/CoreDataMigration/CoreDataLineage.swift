import BackstageModel
import Foundation

/// What the Core Data migrations of a plan say of one store file, followed through the plan's
/// relocations: which of them knows its version. It tells a store further along a chain from an
/// older copy (a restored backup) or a store of another model, where a migration finds neither of
/// its versions.
enum CoreDataLineage {
    /// What the steps after one say of a store.
    enum Later: Equatable {
        /// The step at this index of the plan migrates it from its version (or finds it up to date).
        case known(Int)
        /// No later Core Data migration knows its version, and no step of another kind changes it.
        case unknown
        /// A later step of another kind changes or takes the store (a SQL migration, a split), or a
        /// migration could not read it: its version cannot be told from the Core Data migrations.
        case cannotTell
    }

    /// What `steps` say of the store file at `path`, which is at `location` before them.
    static func later(knowing path: String, at location: ContainerLocation, in steps: ArraySlice<UpgradeStep>) -> Later
    {
        var location = location
        for index in steps.indices {
            let step = steps[index]
            if let move = step.as(UpgradeStep.Relocate.self), move.from.fileKey == location.fileKey {
                location = move.to
            } else if let migration = step.as(UpgradeStep.CoreDataMigration.self) {
                guard migration.store.fileKey == location.fileKey else { continue }
                guard let version = try? CoreDataMigrationRun.storeVersion(of: path, program: migration.program)
                else { return .cannotTell }
                if case .other = version { continue }
                return .known(index)
            } else if step.locations.contains(where: { $0.fileKey == location.fileKey }) {
                return .cannotTell
            }
        }
        return .unknown
    }

    /// The model version of the store file at `path` as the last of `steps`' Core Data migrations
    /// of a store at one of `locations` that knows it tells it; nil when none does (or none can
    /// read it).
    static func earlierVersion(
        of path: String, at locations: [ContainerLocation], in steps: ArraySlice<UpgradeStep>
    ) -> String? {
        let keys = Set(locations.map(\.fileKey))
        for step in steps.reversed() {
            guard let migration = step.as(UpgradeStep.CoreDataMigration.self), keys.contains(migration.store.fileKey),
                let version = try? CoreDataMigrationRun.storeVersion(of: path, program: migration.program)
            else { continue }
            switch version {
            case .source: return migration.program.sourceVersion
            case .destination: return migration.program.destinationVersion
            case .other: continue
            }
        }
        return nil
    }

    /// Why, of two copies of one Core Data store found by a relocation from `source` to
    /// `destination`, the one already at the destination (`destinationPath`) is the older, which
    /// must go to quarantine while the one at `sourcePath` moves: a later migration knows the
    /// source's version and none knows the other's, and an earlier migration of the chain names the
    /// other's version (a restored backup of an earlier release, which the steps before would have
    /// migrated had it been the app's). Nil unless all of that holds: a copy that cannot be read,
    /// or is of a version the plan does not know, never counts as older.
    static func olderCopy(
        at destinationPath: String, than sourcePath: String, from source: ContainerLocation,
        to destination: ContainerLocation, earlier: ArraySlice<UpgradeStep>, later: ArraySlice<UpgradeStep>
    ) -> String? {
        guard case .known(let known) = Self.later(knowing: sourcePath, at: destination, in: later),
            Self.later(knowing: destinationPath, at: destination, in: later) == .unknown,
            let older = earlierVersion(of: destinationPath, at: [source, destination], in: earlier),
            let migration = later[known].as(UpgradeStep.CoreDataMigration.self),
            let version = try? CoreDataMigrationRun.storeVersion(of: sourcePath, program: migration.program)
        else { return nil }
        let program = migration.program
        let moving = version == .source ? program.sourceVersion : program.destinationVersion
        return "the store there is of \(older), an earlier version of the chain; the one moving in is of \(moving)"
    }
}
