import Backstage
import BackstageTestSupport
import Foundation
import Testing

extension ContainerLocation {
    static func documents(_ path: String) -> ContainerLocation { ContainerLocation(.documents, path) }
    static func support(_ path: String) -> ContainerLocation { ContainerLocation(.applicationSupport, path) }
}

/// Plans that contradict themselves are refused before anything moves, naming the step and field.
@Suite struct PlanConsistencyTests {
    /// Runs `plan` on a container holding the Workouts store in Documents, expects the refusal
    /// naming `step` and `field`, and that not one byte of the container changed.
    func expectRefused(
        _ plan: UpgradePlan, plan name: String? = nil, step: Int, field: String, saying fragment: String
    ) async throws {
        let app = try TestContainer()
        try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
        let before = snapshot(app.root)
        await #expect {
            try await Upgrader(container: app.container).upgrade(plan)
        } throws: { error in
            guard let error = error as? BackstageError, case .inconsistentPlan(let number, let named, _) = error.cause, case let plan = error.path else { return false }
            let sentence = "\(error)"
            return plan == (name ?? plan) && number == step && named == field && sentence.contains(fragment)
                && sentence.hasSuffix("nothing was changed: correct the plan") && !sentence.contains("\n")
        }
        #expect(snapshot(app.root) == before, "nothing on disk changed")
        #expect(
            try PythonSQLite.inspect(app.documentsStore("Workout.sqlite"), table: "workout", titleColumn: "name").rows
                == 19)
        #expect(
            !FileManager.default.fileExists(atPath: app.container.backstageDirectory.path),
            "not even the run's lock file")
    }

    @Test func aSplitWhoseTwoTargetsNameOneStoreIsRefused() async throws {
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.split(
                .documents("Workout.sqlite"),
                into: [
                    .init(store: .support("Data.sqlite"), tables: ["workout", "exercise"]),
                    .init(store: .support("data.sqlite"), tables: ["log"]),
                ])
        }
        try await expectRefused(plan, step: 1, field: "split.into[1].store", saying: "as into[0].store does")
    }

    @Test func aTableInTwoTargetsIsRefused() async throws {
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.split(
                .documents("Workout.sqlite"),
                into: [
                    .init(store: .support("Data.sqlite"), tables: ["workout", "exercise"]),
                    .init(store: .support("Cache.sqlite"), tables: ["log", "WORKOUT"]),
                ])
        }
        try await expectRefused(
            plan, step: 1, field: "split.into[1].tables", saying: "table WORKOUT, which into[0] already takes")
    }

    @Test func aTableKeptAndDiscardedIsRefused() async throws {
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.split(
                .documents("Workout.sqlite"),
                into: [
                    .init(store: .support("Data.sqlite"), tables: ["workout", "exercise", "log"])
                ], discard: ["log"])
        }
        try await expectRefused(plan, step: 1, field: "split.discard", saying: "kept or discarded, not both")
    }

    @Test func aSplitIntoItselfOrIntoNothingIsRefused() async throws {
        let into = UpgradePlan(name: "v2") {
            UpgradeStep.split(
                .documents("Workout.sqlite"),
                into: [
                    .init(store: .documents("./Workout.sqlite"), tables: ["workout", "exercise", "log"])
                ])
        }
        try await expectRefused(into, step: 1, field: "split.into[0].store", saying: "the store being split")
        let nothing = UpgradePlan(name: "v2") {
            UpgradeStep.split(.documents("Workout.sqlite"), into: [], discard: ["workout", "exercise", "log"])
        }
        try await expectRefused(nothing, step: 1, field: "split.into", saying: "names no target store")
    }

    @Test func aStoreMovedOntoItselfIsRefused() async throws {
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .documents("workout.sqlite"))
        }
        try await expectRefused(plan, step: 1, field: "relocate.to", saying: "cannot move onto itself")
    }

    @Test func twoStepsPuttingAStoreInOnePlaceAreRefused() async throws {
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .support("Workout.sqlite"))
            UpgradeStep.split(
                .documents("Old.sqlite"), into: [.init(store: .support("Workout.sqlite"), tables: ["workout"])])
        }
        try await expectRefused(
            plan, step: 2, field: "split.into[0].store", saying: "where step 1 of v2 already puts a store")
    }

    /// The second plan of the chain moves the store back where the first took it from: every run
    /// would move it away and back again. The step is named in its own plan.
    @Test func aChainThatMovesAStoreAwayAndBackIsRefused() async throws {
        let chain = UpgradePlan(chain: [
            UpgradePlan(name: "v1-to-v2", version: "v2") {
                UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .support("Workout.sqlite"))
            },
            UpgradePlan(name: "v2-to-v3", version: "v3") {
                UpgradeStep.quarantine()
                UpgradeStep.relocate(from: .support("Workout.sqlite"), to: .documents("Workout.sqlite"))
            },
        ])
        try await expectRefused(
            chain, plan: "v2-to-v3", step: 2, field: "relocate.to",
            saying: "which step 1 of v1-to-v2 moves a store away from")
    }

    @Test func stepsInTheWrongOrderAreRefused() async throws {
        let migrateFirst = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(
                .support("Workout.sqlite"), [.init(id: "v2-notes", sql: "ALTER TABLE workout ADD COLUMN notes TEXT")])
            UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .support("Workout.sqlite"))
        }
        try await expectRefused(migrateFirst, step: 2, field: "relocate.to", saying: "the steps are in the wrong order")
        let migrateAfterMove = UpgradePlan(name: "v2") {
            UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .support("Workout.sqlite"))
            UpgradeStep.migrateSchema(
                .documents("Workout.sqlite"), [.init(id: "v2-notes", sql: "ALTER TABLE workout ADD COLUMN notes TEXT")])
        }
        try await expectRefused(
            migrateAfterMove, step: 2, field: "migrateSchema.store", saying: "the migration would never run")
    }

    @Test func aMigrationIdentifierWithTwoMeaningsIsRefused() async throws {
        let twice = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(
                .documents("Workout.sqlite"),
                [
                    .init(id: "v2", sql: "ALTER TABLE workout ADD COLUMN notes TEXT"),
                    .init(id: "v2", sql: "ALTER TABLE workout ADD COLUMN place TEXT"),
                ])
        }
        try await expectRefused(
            twice, step: 1, field: "migrateSchema.migrations[1].id", saying: "the second would never run")
        let chain = UpgradePlan(chain: [
            UpgradePlan(name: "v1-to-v2") {
                UpgradeStep.migrateSchema(
                    .documents("Workout.sqlite"), [.init(id: "v2", sql: "ALTER TABLE workout ADD COLUMN notes TEXT")])
            },
            UpgradePlan(name: "v2-to-v3") {
                UpgradeStep.migrateSchema(
                    .documents("Workout.sqlite"), [.init(id: "v2", sql: "ALTER TABLE workout ADD COLUMN place TEXT")])
            },
        ])
        try await expectRefused(
            chain, plan: "v2-to-v3", step: 1, field: "migrateSchema.migrations[0].sql",
            saying: "would never run this one")
    }

    /// GRDB's way: each plan lists every migration so far; the same identifier with the same SQL
    /// is the same migration. The shipped Notes chain passes too.
    @Test func consistentPlansPass() throws {
        let migration = UpgradeStep.MigrateSchema.Migration(id: "v2", sql: "ALTER TABLE workout ADD COLUMN notes TEXT")
        try UpgradePlan(chain: [
            UpgradePlan(name: "v1-to-v2") {
                UpgradeStep.migrateSchema(.documents("Workout.sqlite"), [migration])
                UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .support("Workout.sqlite"))
            },
            UpgradePlan(name: "v2-to-v3") {
                UpgradeStep.migrateSchema(
                    .support("Workout.sqlite"), [migration, .init(id: "v3", sql: "DELETE FROM log")])
                UpgradeStep.split(
                    .support("Workout.sqlite"),
                    into: [.init(store: .support("Data.sqlite"), tables: ["workout", "exercise"])], discard: ["log"])
                UpgradeStep.migrateSchema(
                    .support("Data.sqlite"), [.init(id: "v3-index", sql: "CREATE INDEX w ON workout(name)")])
            },
        ]).checkConsistency()
        let plans = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appending(path: "Fixtures/Notes/plans")
        try UpgradePlan(
            chain: ["v1-to-v2", "v2-to-v3", "v3-to-v4"].map {
                try UpgradePlan.load(from: plans.appending(path: "\($0).json"))
            }
        )
        .checkConsistency()
    }

    @Test func aStoreLocationNamingAFolderOrASidecarIsRefused() async throws {
        let folder = UpgradePlan(name: "v2") {
            UpgradeStep.relocate(from: .documents(""), to: .support("Workout.sqlite"))
        }
        try await expectRefused(folder, step: 1, field: "relocate.from", saying: "a folder")
        let sidecar = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(.documents("Workout.sqlite-wal"), [.init(id: "v2", sql: "DELETE FROM log")])
        }
        try await expectRefused(sidecar, step: 1, field: "migrateSchema.store", saying: "a sidecar (-wal) of another store")
    }
}
