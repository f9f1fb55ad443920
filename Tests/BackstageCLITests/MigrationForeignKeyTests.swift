import Backstage
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// Real stores hold foreign-key violations (SQLite enforces none unless asked): a migration must
/// not fail for those, and the error of one that adds its own names the row, never its values.
@Suite struct MigrationForeignKeyTests {
    static let secret = "felt great after the river loop"

    /// documents/App.sqlite with a workout whose athlete does not exist.
    static func container() throws -> TemporaryDirectory {
        let scratch = try TemporaryDirectory()
        try FileManager.default.createDirectory(at: scratch.url.appending(path: "Documents"), withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false  // as SQLite's default: the app never turned them on
        let queue = try DatabaseQueue(path: scratch.url.appending(path: "Documents/App.sqlite").path, configuration: configuration)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE athlete (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                CREATE TABLE workout (id INTEGER PRIMARY KEY, athleteId INTEGER REFERENCES athlete(id), notes TEXT);
                INSERT INTO athlete VALUES (1, 'Ann Example');
                INSERT INTO workout VALUES (1, 1, 'short'), (2, 55501, '\(secret)');
                """)
        }
        try queue.close()
        return scratch
    }

    static func upgrade(_ scratch: TemporaryDirectory, _ sql: String, checks: String? = nil) throws -> ProcessResult {
        var step: [String: Any] = ["store": "documents/App.sqlite", "migrations": [["id": "m1", "sql": sql]]]
        if let checks { step["foreignKeyChecks"] = checks }
        let plan = scratch.url.appending(path: "plan.json")
        try JSONSerialization.data(withJSONObject: ["name": "v2", "steps": [["migrateSchema": step]]]).write(to: plan)
        return try runProcess(backstageExecutable, ["upgrade", scratch.path, "--plan", plan.path])
    }

    static func columns(_ scratch: TemporaryDirectory) throws -> [String] {
        try DatabaseQueue(path: scratch.url.appending(path: "Documents/App.sqlite").path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('workout')")
        }
    }

    @Test(arguments: ["deferred", "immediate", "none", nil])
    func aStoreThatAlreadyHoldsViolationsMigrates(_ checks: String?) throws {
        let scratch = try Self.container()
        let result = try Self.upgrade(scratch, "ALTER TABLE workout ADD COLUMN extra TEXT; CREATE INDEX workout_extra ON workout(extra);", checks: checks)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(try Self.columns(scratch).contains("extra"))
    }

    @Test func aMigrationThatAddsAViolationIsRolledBackNamingTableAndRowidButNoValue() throws {
        let scratch = try Self.container()
        let result = try Self.upgrade(scratch, "ALTER TABLE workout ADD COLUMN extra TEXT; UPDATE workout SET athleteId = 987654 WHERE id = 1;")
        #expect(result.status != 0)
        let output = result.stdout + result.stderr
        #expect(output.contains("m1") && output.contains("workout") && output.contains("rowid 1") && output.contains("App.sqlite"), "\(output)")
        for value in [Self.secret, "short", "Ann Example", "987654", "55501"] {
            #expect(!output.contains(value), "the output holds a row's value \(value): \(output)")
        }
        #expect(try !Self.columns(scratch).contains("extra"), "rolled back")
    }
}
