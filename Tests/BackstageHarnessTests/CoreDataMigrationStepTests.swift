import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import GRDB
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

/// A chain of Core Data migrations whose version hashes are unknown (run for a simulation or a bench,
/// `omitForTesting`) and whose model versions carry no version identifiers: the metadata of a store
/// of each version then says the same, and the schema tells which version a store is of.
@Suite struct CoreDataStoreVersionTests {
    typealias Migration = CoreDataMigrationTests

    struct Chain {
        let scratch: TemporaryDirectory
        let model: CoreDataModel
        let app: TestContainer
        let plan: UpgradePlan
        var store: URL { app.applicationSupport.appending(path: "Library.sqlite") }
    }

    static func chain(identifiers: Bool = false) throws -> Chain {
        let scratch = try TemporaryDirectory()
        let model = try Migration.writeLibrary(in: scratch, identifiers: identifiers)
        let app = try TestContainer(declaring: ["Library.sqlite"])
        let location = ContainerLocation(.applicationSupport, "Library.sqlite")
        let steps = try (0..<2).map { index in
            let program = try CoreDataMigrationCompiler.compile(
                from: model.versions[index], to: model.versions[index + 1])
            #expect(program.metadata.versionHashes == nil, "the test is of a chain without version hashes")
            return UpgradeStep.coreDataMigration(.init(store: location, program: program, missingHashes: .omitForTesting))
        }
        return Chain(scratch: scratch, model: model, app: app, plan: UpgradePlan(name: "1-to-3", steps: steps))
    }

    static let rows = [
        "INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 3, 1, 'Fiction')",
        "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZSHELF, ZPAGES, ZTITLE) VALUES (1, 1, 1, 1, NULL, 'Map'), (2, 2, 1, 1, 320, 'Dune')",
    ]

    @Test(arguments: [false, true])
    func everyStepOfTheChainRunsOnAStoreOfItsSourceVersionAndTheRerunSaysWhyEachIsSkipped(_ identifiers: Bool) async throws {
        let chain = try Self.chain(identifiers: identifiers)
        _ = try Migration.generatedStore(chain.model.versions[0], at: chain.store, rows: Self.rows)
        let before = try Migration.inspect(chain.store)
        let upgrader = Upgrader(container: chain.app.container)
        let report = try await upgrader.upgrade(chain.plan)
        #expect(report.steps.map(\.outcome) == [.done, .done], "\(report.steps.map { $0.reason ?? "" })")
        let after = try Migration.expectLayout(chain.store, of: chain.model.versions[2], scratch: chain.scratch)
        #expect(Migration.rows(after, "ZITEM").mapValues { $0["ZNAME"] } == Migration.rows(before, "ZITEM").mapValues { $0["ZTITLE"] })

        let again = try await upgrader.upgrade(chain.plan)
        #expect(again.steps.map(\.outcome) == [.skipped, .skipped])
        #expect(again.steps[0].reason?.hasPrefix("not of Library nor Library 2") == true, "\(again.steps[0].reason ?? "")")
        #expect(again.steps[1].reason?.hasPrefix("up to date") == true, "\(again.steps[1].reason ?? "")")
        #expect(try Migration.inspect(chain.store).rows == after.rows)
    }

    @Test func aStoreOfTheMiddleVersionGetsOnlyTheLastStep() async throws {
        let chain = try Self.chain()
        _ = try Migration.generatedStore(chain.model.versions[1], at: chain.store, rows: [])
        let report = try await Upgrader(container: chain.app.container).upgrade(chain.plan)
        #expect(report.steps.map(\.outcome) == [.skipped, .done])
        #expect(report.steps[0].reason?.contains("up to date") == true, "\(report.steps[0].reason ?? "")")
        _ = try Migration.expectLayout(chain.store, of: chain.model.versions[2], scratch: chain.scratch)
    }

    @Test func aStoreOfNeitherVersionIsLeftAsItIsAndEachSkipSaysSo() async throws {
        let chain = try Self.chain()
        _ = try Migration.generatedStore(chain.model.versions[0], at: chain.store, rows: [])
        try PythonSQLite.run(
            "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1]); c.execute('ALTER TABLE ZITEM ADD COLUMN ZEXTRA TEXT'); c.commit()",
            [chain.store.path])
        let bytes = try Data(contentsOf: chain.store)
        let report = try await Upgrader(container: chain.app.container).upgrade(chain.plan)
        #expect(report.steps.map(\.outcome) == [.skipped, .skipped])
        #expect(report.steps.allSatisfy { $0.reason?.contains("its schema is neither version's") == true }, "\(report.steps.map { $0.reason ?? "" })")
        #expect(try Data(contentsOf: chain.store) == bytes)
    }

    @Test func aRowOfNoEntityIsRefusedByNameAndCountAndNothingChanges() async throws {
        let chain = try Self.chain()
        _ = try Migration.generatedStore(
            chain.model.versions[0], at: chain.store,
            rows: Self.rows + ["INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (3, 99, 1, 'Stray')"])
        let bytes = try Data(contentsOf: chain.store)
        let upgrader = Upgrader(container: chain.app.container)
        do {
            _ = try await upgrader.upgrade(chain.plan)
            Issue.record("a store holding a row of no entity was migrated")
        } catch let error as BackstageError {
            guard case .migrationFailed(let id, let message) = error.cause else {
                Issue.record("\(error)")
                return
            }
            #expect(id == "Library → Library 2")
            #expect(message.contains("ZITEM holds 1 row whose Z_ENT is none of its entities' (1, 2)"), "\(message)")
            #expect(error.path == chain.store.path)
            #expect(!"\(error)".contains("Stray"), "no row value in an error")
        }
        #expect(try Data(contentsOf: chain.store) == bytes, "nothing changed")
    }

    @Test func whatAStoreDiffersInIsNamedWithoutAValue() throws {
        let chain = try Self.chain()
        _ = try Migration.generatedStore(chain.model.versions[0], at: chain.store, rows: Self.rows)
        let program = try #require(chain.plan.steps[1].as(UpgradeStep.CoreDataMigration.self)?.program)
        let expected = try #require(program.destinationSignature)
        let queue = try DatabaseQueue(path: chain.store.path)
        let store = try queue.read { try CoreDataMigrationProgram.signature(of: $0, comparedWith: [expected]) }
        let differences = expected.differences(from: store)
        #expect(!differences.isEmpty)
        #expect(differences.contains { $0.hasPrefix("table ZITEM") }, "\(differences)")
        #expect(!differences.joined().contains("Dune"))
    }
}

extension UpgradeStep.CoreDataMigration {
    /// The boundaries a crash test kills the step at (`done` is after the journal is cleared).
    static let phasesForTests = ["journaled", "locked", "migrating", "migrated"]
}
