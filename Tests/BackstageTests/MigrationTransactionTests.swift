import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A migration runs inside Backstage's transaction: SQL that would end or open it is refused before
/// anything runs, found by SQLite's own reading of the SQL, not by a text search.
@Suite struct MigrationTransactionTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var sql: String
        var statement: Int
        var testDescription: String { sql.replacingOccurrences(of: "\n", with: " ") }
    }

    static let refused: [Case] = [
        Case(sql: "UPDATE workout SET name = 'x'; COMMIT; DELETE FROM workout", statement: 2),
        Case(sql: "update workout set name = 'x';\n/* tidy up */ -- then\n commit;delete from workout", statement: 2),
        Case(sql: "END TRANSACTION; DELETE FROM workout", statement: 1),
        Case(sql: "DELETE FROM workout; ROLLBACK", statement: 2),
        Case(sql: "BEGIN IMMEDIATE; DELETE FROM workout", statement: 1),
        Case(sql: "DELETE FROM log; RELEASE SAVEPOINT outer_one", statement: 2),
        Case(sql: "SAVEPOINT a; DELETE FROM log; ROLLBACK TRANSACTION TO b", statement: 3),
        Case(sql: "SAVEPOINT a; DELETE FROM workout", statement: 2),
    ]

    /// The store stays in Documents with every row: the relocation before the migration did not run either.
    @Test(arguments: refused)
    func sqlThatEndsBackstagesTransactionIsRefusedBeforeAnythingMoves(_ refused: Case) async throws {
        let app = try TestContainer()
        try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
        let before = snapshot(app.root)
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .support("Workout.sqlite"))
            UpgradeStep.migrateSchema(.support("Workout.sqlite"), [.init(id: "v2-tidy", sql: refused.sql)])
        }
        await #expect {
            try await Upgrader(container: app.container).upgrade(plan)
        } throws: { error in
            guard let error = error as? BackstageError, case .migrationRefused("v2-tidy", refused.statement, _) = error.cause, case let store = error.path else {
                return false
            }
            return store == app.supportStore("Workout.sqlite").main.path && "\(error)".contains("did not run")
        }
        #expect(snapshot(app.root) == before, "nothing on disk changed")
        #expect(
            try PythonSQLite.inspect(app.documentsStore("Workout.sqlite"), table: "workout", titleColumn: "name").rows
                == 19)
    }

    /// A string literal `'COMMIT;'`, a column named `commit`, a trigger's `BEGIN ... END`, comments
    /// saying `BEGIN` and a savepoint the migration releases are all fine.
    @Test func transactionWordsThatEndNothingPass() async throws {
        let app = try TestContainer()
        try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
        let sql = """
            /* BEGIN; */ UPDATE workout SET "commit" = 'COMMIT; END' WHERE id = 1; -- ROLLBACK
            SAVEPOINT tidy; DELETE FROM log WHERE id > 10; RELEASE tidy;
            CREATE TRIGGER log_workout AFTER INSERT ON workout BEGIN INSERT INTO log(line) VALUES ('added'); END;
            INSERT INTO workout(name) VALUES ('rollback')
            """
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .support("Workout.sqlite"))
            UpgradeStep.migrateSchema(.support("Workout.sqlite"), [.init(id: "v2-tidy", sql: sql)])
        }
        let report = try await Upgrader(container: app.container).upgrade(plan)
        #expect(report.steps.map(\.outcome) == [.done, .done])
        let store = app.supportStore("Workout.sqlite")
        #expect(
            try PythonSQLite.inspect(store, table: "workout", titleColumn: "coalesce(\"commit\", '')").titles.contains(
                "COMMIT; END"))
        #expect(try PythonSQLite.inspect(store, table: "workout", titleColumn: "name").rows == 20)
        #expect(try PythonSQLite.inspect(store, table: "log", titleColumn: "line").rows == 11)
    }

    /// A migration naming a table the store will not have fails before the relocation before it moves anything.
    @Test func aMigrationOfAMissingTableIsRefusedBeforeAnythingMoves() async throws {
        let app = try TestContainer()
        try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
        let before = snapshot(app.root)
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.relocate(from: .documents("Workout.sqlite"), to: .support("Workout.sqlite"))
            UpgradeStep.split(
                .support("Workout.sqlite"),
                into: [
                    .init(store: .support("Data.sqlite"), tables: ["workout", "exercise"]),
                    .init(store: .support("Cache.sqlite"), tables: ["log"]),
                ])
            UpgradeStep.migrateSchema(
                .support("Cache.sqlite"), [.init(id: "v2", sql: "CREATE INDEX w ON workout(name)")])
        }
        await #expect(
            throws: BackstageError(.migrationWouldFail(id: "v2", message: "no such table: main.workout"), path: app.supportStore("Cache.sqlite").main.path, during: .checkingPlan)
        ) {
            try await Upgrader(container: app.container).upgrade(plan)
        }
        #expect(snapshot(app.root) == before)
    }

    /// A table that exists only in the store's `-wal` (the app was killed): the rehearsal, which
    /// reads the main file, leaves the migration to the run, where each statement is still checked
    /// before it runs inside the migration's transaction: the `COMMIT` is refused, the `INSERT`
    /// before it rolled back, and no row is lost.
    @Test func theRunItselfRefusesTransactionControlWhenTheRehearsalCouldNot() async throws {
        let app = try TestContainer()
        let store = app.documentsStore("Workout.sqlite")
        try makeWorkoutStore(store.main)
        let killed = try PythonSQLite.run("""
            import sqlite3, sys, os, signal
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("pragma wal_autocheckpoint=0")
            c.execute("create table goal(id integer primary key, target integer)")
            os.kill(os.getpid(), signal.SIGKILL)
            """, [store.main.path])
        #expect(killed.killedBySignal == SIGKILL)
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(.documents("Workout.sqlite"), [
                .init(id: "v2-goals", sql: "INSERT INTO goal(target) VALUES (5); COMMIT; DELETE FROM workout")
            ])
        }
        await #expect {
            try await Upgrader(container: app.container).upgrade(plan)
        } throws: { error in
            guard let error = error as? BackstageError, case .migrationRefused("v2-goals", 2, let reason) = error.cause else { return false }
            return !reason.contains("found before anything was changed")  // the run's own check
        }
        #expect(try PythonSQLite.inspect(store, table: "workout", titleColumn: "name").rows == 19)
        #expect(try PythonSQLite.inspect(store, table: "goal", titleColumn: "target").rows == 0)
    }

    /// Each migration commits on its own: when the second fails, the error says the first stays applied.
    @Test func aFailingMigrationSaysWhichOfItsStepStayApplied() async throws {
        let app = try TestContainer()
        try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(.documents("Workout.sqlite"), [
                .init(id: "v2-notes", sql: "ALTER TABLE workout ADD COLUMN notes TEXT"),
                .init(id: "v2-one-name", sql: "CREATE UNIQUE INDEX one_name ON workout(substr(name, 1, 3))"),
            ])
        }
        await #expect {
            try await Upgrader(container: app.container).upgrade(plan)
        } throws: { error in
            guard let error = error as? BackstageError, case .migrationFailed("v2-one-name", let message) = error.cause else { return false }
            return message.hasSuffix("(v2-notes, applied before it in this step, stay applied)")
        }
        #expect(try PythonSQLite.inspect(app.documentsStore("Workout.sqlite"), table: "workout", titleColumn: "notes").rows == 19)
    }
}
