import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The Upgrader's estimate of a `coreDataMigration` step weighs what the program does to the store's
/// tables (copy, index, drop), each followed through the renames that set it aside, at the rates of
/// rewriting a table: not the bytes at the rate of adding a column, which made the estimate 0.1–5 %
/// of the time `bench --catalog` measured.
@Suite struct CoreDataMigrationEstimateTests {
    typealias Migration = CoreDataMigrationTests

    /// wibosco's store of version 3 (7,995 posts) in an app's container, and the step to version 4,
    /// which rebuilds ZPOST (a Boolean added) and its index.
    static func app() throws -> (app: TestContainer, scratch: TemporaryDirectory, step: UpgradeStep.CoreDataMigration) {
        let app = try TestContainer(declaring: ["App.sqlite"])
        let scratch = try TemporaryDirectory()
        let project = try CoreDataModelTests.copy("wibosco", into: scratch)
        let model = try CoreDataModelReader.read(project.appending(path: Migration.wibosco))
        let program = try CoreDataMigrationCompiler.compile(from: model.versions[2], to: model.versions[3])
        let copy = try Migration.copyStore(project, "CoreDataMigration_Example_3.sqlite", to: scratch, as: "v3.sqlite")
        try FileManager.default.copyItem(at: copy, to: app.applicationSupport.appending(path: "App.sqlite"))
        return (app, scratch, .init(store: ContainerLocation(.applicationSupport, "App.sqlite"), program: program))
    }

    @Test func aRealStoresEstimateIsTheTimeOfRewritingTheTablesItMoves() throws {
        guard CoreDataModelTests.sharedIsThere else { return }
        let (app, _, step) = try Self.app()
        let store = app.applicationSupport.appending(path: "App.sqlite")
        // The bytes the step moves: ZPOST and its index, as SQLite counts them.
        let counted = try PythonSQLite.run(
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("SELECT sum(pgsize) FROM dbstat WHERE name IN ('ZPOST', 'ZPOST_ZCOLOR_INDEX')").fetchone()[0])
            """, [store.path])
        let moved = try #require(Double(counted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(moved > 300_000, "ZPOST and its index hold \(moved) bytes")

        let upgrader = Upgrader(container: app.container)
        let estimate = upgrader.estimate(UpgradePlan(name: "v3-to-v4", steps: [.coreDataMigration(step)]))
        let seconds = try #require(estimate.steps.first?.seconds) - upgrader.throughput.perStep
        // Copying rows, building an index and dropping the old table run at 10 MB/s to 1 GB/s here;
        // the old estimate's 8 GB/s was the rate of adding a column (0.08 ms for these bytes).
        #expect(
            seconds >= moved / 1e9 && seconds <= moved / 10e6,
            "\(seconds) s estimated for \(moved) bytes moved: \(moved / max(seconds, 1e-12) / 1e6) MB/s")
    }

    /// Each piece of work names the store's own table, through the rename that set it aside and the
    /// copy into the new table: `CREATE INDEX … ON ZPOST` weighs the rows copied, `DROP TABLE
    /// _BACKSTAGE_SOURCE_ZPOST` the old table; the kept ZCOLOR is not touched.
    @Test func theWorkFollowsEachTableThroughItsRenameAndCopy() throws {
        guard CoreDataModelTests.sharedIsThere else { return }
        let (_, _, step) = try Self.app()
        let works = CoreDataMigrationCost.works(step.program)
        #expect(works.contains(.copy(["zpost"])))
        #expect(works.contains(.index(["zpost"])))
        #expect(works.contains(.drop(["zpost"])))
        let tables = CoreDataMigrationCost.tables(works)
        #expect(!tables.contains { $0.hasPrefix("_backstage") }, "\(tables)")
        #expect(!tables.contains("zcolor"), "\(tables)")
    }

    /// A program that numbers an ordered relationship's positions (Garden 2 → 3 of the history
    /// tests) weighs the numbering on the source table, the temporary table it goes into costs nothing.
    @Test func numberedPositionsWeighTheSourceRows() throws {
        let program = CoreDataMigrationProgram(
            sourceVersion: "2", destinationVersion: "3",
            statements: [
                "ALTER TABLE ZPLANT RENAME TO _BACKSTAGE_SOURCE_ZPLANT",
                "CREATE TABLE ZPLANT ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZBED INTEGER, Z_FOK_BED INTEGER )",
                "CREATE TEMP TABLE _BACKSTAGE_ORDER_ZPLANT_Z_FOK_BED (pk INTEGER PRIMARY KEY, n INTEGER)",
                "INSERT INTO temp._BACKSTAGE_ORDER_ZPLANT_Z_FOK_BED (pk, n) SELECT s.Z_PK, row_number() OVER "
                    + "(PARTITION BY s.ZBED ORDER BY s.Z_PK) FROM _BACKSTAGE_SOURCE_ZPLANT AS s WHERE (s.ZBED) IS NOT NULL "
                    + "ORDER BY s.Z_PK",
                "INSERT INTO ZPLANT (Z_PK, Z_ENT, Z_OPT, ZBED, Z_FOK_BED) SELECT s.Z_PK, 3, s.Z_OPT, s.ZBED, "
                    + "(SELECT n FROM temp._BACKSTAGE_ORDER_ZPLANT_Z_FOK_BED WHERE pk = s.Z_PK) FROM _BACKSTAGE_SOURCE_ZPLANT AS s",
                "DROP TABLE temp._BACKSTAGE_ORDER_ZPLANT_Z_FOK_BED",
                "DROP TABLE _BACKSTAGE_SOURCE_ZPLANT",
                "CREATE INDEX ZPLANT_ZBED_INDEX ON ZPLANT (ZBED)",
            ].map(CoreDataMigrationProgram.Statement.sql),
            plainSQLBaseline: [], metadata: .init(versionIdentifiers: ["3"], versionHashes: nil, versionHashesSource: nil),
            rewrites: [.init(table: "ZPLANT", sources: ["ZPLANT"])], keptTables: [], droppedTables: [], unresolved: [],
            assumptions: [])
        #expect(
            CoreDataMigrationCost.works(program) == [
                .positions(["zplant"]), .copy(["zplant"]), .drop(["zplant"]), .index(["zplant"]),
            ])
    }
}
