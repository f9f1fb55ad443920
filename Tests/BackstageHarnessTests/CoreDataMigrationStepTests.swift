import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The `coreDataMigration` step: a Core Data store of version 1 in an app's container, upgraded by a
/// plan whose step holds the program compiled from the model bundle, is the store Core Data wrote for
/// version 2, every row kept; killed at each of its boundaries, the next run finishes it and the store
/// is still exactly that.
@Suite struct CoreDataMigrationStepTests {
    typealias Migration = CoreDataMigrationTests

    /// mwkirk's app: its store of version 1 at applicationSupport/App.sqlite, and the plan 1 → 2 as JSON.
    struct App {
        let app: TestContainer
        let scratch: TemporaryDirectory
        let project: URL
        let plan: UpgradePlan
        let planFile: URL
        var store: URL { app.applicationSupport.appending(path: "App.sqlite") }
    }

    static func app() throws -> App {
        let app = try TestContainer(declaring: ["App.sqlite"])
        let scratch = try TemporaryDirectory()
        let project = try CoreDataModelTests.copy("mwkirk", into: scratch)
        let model = try CoreDataModelReader.read(project.appending(path: "MWKCoreDataTests.xcdatamodeld"))
        let program = try CoreDataMigrationCompiler.compile(
            from: model.versions[0], to: model.versions[1], options: .init(writesModelCache: false))
        #expect(program.unresolved.isEmpty)
        let copy = try Migration.copyStore(project, "MWKCoreDataTests.sqlite", to: scratch, as: "v1.sqlite")
        try FileManager.default.copyItem(at: copy, to: app.applicationSupport.appending(path: "App.sqlite"))
        let plan = UpgradePlan(name: "v1-to-v2", version: "2") {
            UpgradeStep.coreDataMigration(
                .init(store: ContainerLocation(.applicationSupport, "App.sqlite"), program: program))
        }
        let planFile = app.root.appending(path: "plan.json")
        try JSONEncoder().encode(plan).write(to: planFile)
        return App(app: app, scratch: scratch, project: project, plan: plan, planFile: planFile)
    }

    @Test func anUpgradeMigratesTheStoreToTheNextModelVersionAndTheNextRunHasNothingToDo() async throws {
        guard CoreDataModelTests.sharedIsThere else { return }
        let app = try Self.app()
        // The plan as an app ships it: read back from its JSON, the same step.
        let loaded = try UpgradePlan.load(from: app.planFile)
        #expect(loaded == app.plan)
        #expect(loaded.steps.first?.kind == .coreDataMigration)
        let before = try Migration.inspect(app.store)

        #expect(Upgrader.needsUpgrade(app.app.container, loaded))
        let upgrader = Upgrader(container: app.app.container)
        #expect(upgrader.estimate(loaded).steps.count == 1)
        try upgrader.preflight(loaded)
        let report = try await upgrader.upgrade(loaded)
        #expect(report.steps.map(\.outcome) == [.done])

        let truth = try Migration.copyStore(app.project, "MWKCoreDataTests2.sqlite", to: app.scratch, as: "truth.sqlite")
        let after = try Migration.expectSameStore(app.store, as: truth, source: before)
        #expect(Migration.rows(after, "ZEMPLOYEE").mapValues { $0["ZNAME"] } == Migration.rows(before, "ZEMPLOYEE").mapValues { $0["ZNAME"] })
        #expect(!Upgrader.needsUpgrade(app.app.container, loaded), "the store's metadata names version 2")
        let again = try await upgrader.upgrade(loaded)
        #expect(again.steps.map(\.outcome) == [.skipped])
        #expect(!FileManager.default.fileExists(atPath: app.app.container.backstageDirectory.appending(path: "journal.json").path))
    }

    @Test(arguments: UpgradeStep.CoreDataMigration.phasesForTests)
    func killedAtABoundaryTheNextRunLeavesExactlyTheNextVersionsStore(_ phase: String) throws {
        guard CoreDataModelTests.sharedIsThere else { return }
        let app = try Self.app()
        let before = try Migration.inspect(app.store)
        let killed = try runSimulateChild(
            .upgrade(arguments: [app.app.root.path, "--plan", app.planFile.path], crashAt: CrashPoint(.coreDataMigration, try #require(StepPhase(rawValue: phase)))))
        #expect(killed.killedBySignal == SIGKILL, "the upgrade must really be interrupted at \(phase): \(killed.stderr)")
        let rerun = try runProcess(backstageExecutable, ["upgrade", app.app.root.path, "--plan", app.planFile.path])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let truth = try Migration.copyStore(app.project, "MWKCoreDataTests2.sqlite", to: app.scratch, as: "truth.sqlite")
        let after = try Migration.expectSameStore(app.store, as: truth, source: before)
        #expect(Migration.rows(after, "ZEMPLOYEE").count == Migration.rows(before, "ZEMPLOYEE").count)
        #expect(!FileManager.default.fileExists(atPath: app.app.container.backstageDirectory.appending(path: "journal.json").path))
    }

    @Test func aProgramWithoutTheDestinationsVersionHashesIsRefusedBeforeAnythingChanges() throws {
        guard CoreDataModelTests.sharedIsThere else { return }
        let app = try Self.app()
        var step = try #require(app.plan.steps.first?.as(UpgradeStep.CoreDataMigration.self))
        step.program.metadata.versionHashes = nil
        step.program.unresolved = [.missingVersionHashes(entities: ["Employee"])]
        let plan = UpgradePlan(name: "v1-to-v2", steps: [.coreDataMigration(step)])
        try JSONEncoder().encode(plan).write(to: app.planFile)
        let before = try Data(contentsOf: app.store)
        let refused = try runProcess(backstageExecutable, ["upgrade", app.app.root.path, "--plan", app.planFile.path])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("version hashes") && refused.stderr.contains("Employee"), "\(refused.stderr)")
        #expect(try Data(contentsOf: app.store) == before, "the store is untouched")
    }
}

extension UpgradeStep.CoreDataMigration {
    /// The boundaries a crash test kills the step at (`done` is after the journal is cleared).
    static let phasesForTests = ["journaled", "locked", "migrating", "migrated"]
}
