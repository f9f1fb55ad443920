import BackstageTestSupport
import Foundation
import Testing

/// `backstage catalog lint` on a Workouts catalog captured from a real store: each rule tripped by
/// a migration the captured data would break, and not tripped by the same migration made safe.
@Suite struct CatalogLintTests {
    static let prefix = "v2: error: documents/Workouts.sqlite, migration m1, table "

    /// Captures the Workouts store as v1, adds a v2 reached by a plan of `migrations`, lints.
    static func lint(
        _ migrations: String, command: [String] = ["catalog", "lint", "Workouts"],
        editSchema: ((String) -> String)? = nil
    )
        throws -> ProcessResult
    {
        let scratch = try capturedCatalog(
            "Workouts",
            storeMadeBy: """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("create table workout(id integer primary key, name text, minutes integer, started integer, note text)")
            c.execute("create table setting(key text primary key, value text)")
            c.execute("create table coach(id integer primary key, name text)")
            c.executemany("insert into workout(name, minutes, started, note) values (?, ?, ?, ?)",
                          [("run", 30, 1000, None), ("swim", 45, 2000, "lane 4"), ("run", 20, 3000, None)])
            c.execute("insert into setting values ('units', 'km')")
            c.commit()
            """)
        let catalog = scratch.url.appending(path: "Workouts")
        try FileManager.default.createDirectory(at: catalog.appending(path: "plans"), withIntermediateDirectories: true)
        let plan =
            #"{"name": "v1-to-v2", "steps": [{"migrateSchema": {"store": "documents/Workouts.sqlite", "migrations": [\#(migrations)]}}]}"#
        try Data(plan.utf8).write(to: catalog.appending(path: "plans/v1-to-v2.json"))
        let added = try PythonSQLite.run(
            """
            import json, sys
            m = json.load(open(sys.argv[1]))
            v2 = dict(m["versions"][0]); v2["name"] = "v2"; v2["plan"] = "plans/v1-to-v2.json"
            m["versions"].append(v2)
            json.dump(m, open(sys.argv[1], "w"), indent=1)
            """, [catalog.appending(path: "catalog.json").path])
        #expect(added.status == 0, "\(added.stderr)")
        if let editSchema {
            let schema = catalog.appending(path: "stores/v1/documents-Workouts.sqlite.json")
            try Data(editSchema(try String(contentsOf: schema, encoding: .utf8)).utf8).write(to: schema)
        }
        if command.contains("add-version") {
            // v2 comes from add-version itself: the catalog keeps v1 only, the plan waits beside it.
            let removed = try PythonSQLite.run(
                """
                import json, sys
                m = json.load(open(sys.argv[1])); m["versions"] = m["versions"][:1]
                json.dump(m, open(sys.argv[1], "w"), indent=1)
                """, [catalog.appending(path: "catalog.json").path])
            #expect(removed.status == 0)
            try FileManager.default.moveItem(
                at: catalog.appending(path: "plans/v1-to-v2.json"), to: scratch.url.appending(path: "v1-to-v2.json"))
        }
        return try runProcess(backstageExecutable, command, currentDirectory: scratch.url)
    }

    /// The rest of a rebuild of workout as w2.
    static let copy =
        "; INSERT INTO w2 SELECT id, name, minutes, started, note FROM workout; DROP TABLE workout; ALTER TABLE w2 RENAME TO workout"

    static func migration(_ sql: String, destructive: Bool = false) -> String {
        #"{"id": "m1", "sql": "\#(sql)""# + (destructive ? #", "destructive": true}"# : "}")
    }

    @Test(arguments: [
        (
            "CREATE UNIQUE INDEX workout_name ON workout(name)",
            "workout: CREATE UNIQUE INDEX on name fails: its values repeat in the captured data (67% distinct); "
                + "remove the duplicates first, in the same migration"
        ),
        (
            "ALTER TABLE workout ADD COLUMN kcal INTEGER NOT NULL",
            "workout: ADD COLUMN kcal NOT NULL without a DEFAULT fails on every install: SQLite cannot fill its existing rows; give it a DEFAULT"
        ),
        (
            "CREATE TABLE w2(id INTEGER PRIMARY KEY, name TEXT, minutes INTEGER, started INTEGER, note TEXT NOT NULL); "
                + "INSERT INTO w2 SELECT id, name, minutes, started, note FROM workout; DROP TABLE workout; ALTER TABLE w2 RENAME TO workout",
            "workout: the rebuilt table declares note NOT NULL, but 67% of its rows hold NULL there in the captured data"
        ),
        (
            "CREATE TABLE w2(id INTEGER PRIMARY KEY, name TEXT, minutes INTEGER, started INTEGER REFERENCES coach(id), note TEXT)"
                + Self.copy,
            "workout: the rebuilt table declares started REFERENCES coach, but coach is empty in the captured data while started "
                + "holds values: those rows violate the foreign key"
        ),
        (
            "CREATE TABLE w2(id INTEGER PRIMARY KEY, name TEXT, minutes INTEGER, started INTEGER, note TEXT CHECK (typeof(note) = 'text'))"
                + Self.copy,
            "workout: the rebuilt table declares CHECK (typeof(note) = 'text'), but 67% of its rows hold another kind of value (or NULL) "
                + "in the captured data"
        ),
        (
            "DROP TABLE setting",
            #"setting: DROP TABLE deletes its 1 rows (in the captured data): if that is meant, say \"destructive\": true in the migration"#
        ),
        (
            "ALTER TABLE workout DROP COLUMN note",
            #"workout: DROP COLUMN note deletes values it holds in 3 rows (in the captured data): if that is meant, say \"destructive\": true in the migration"#
        ),
    ])
    func aMigrationTheCapturedDataWouldBreakIsAnError(sql: String, finding: String) throws {
        let result = try Self.lint(Self.migration(sql))
        #expect(result.status == 1)
        #expect(
            result.stdout == Self.prefix + finding.replacingOccurrences(of: #"\""#, with: "\"") + "\n",
            "\(result.stdout) \(result.stderr)")
    }

    @Test(arguments: [
        Self.migration("CREATE UNIQUE INDEX workout_started ON workout(started)"),
        Self.migration("ALTER TABLE workout ADD COLUMN kcal INTEGER NOT NULL DEFAULT 0"),
        Self.migration(
            "CREATE TABLE w2(id INTEGER PRIMARY KEY, name TEXT NOT NULL, minutes INTEGER, started INTEGER, note TEXT); "
                + "INSERT INTO w2 SELECT id, name, minutes, started, note FROM workout; DROP TABLE workout; ALTER TABLE w2 RENAME TO workout"
        ),
        Self.migration(
            "CREATE TABLE w2(id INTEGER PRIMARY KEY, name TEXT, minutes INTEGER, started INTEGER REFERENCES setting(key), note TEXT)"
                + Self.copy),
        Self.migration(
            "CREATE TABLE w2(id INTEGER PRIMARY KEY, name TEXT, minutes INTEGER CHECK (typeof(minutes) = 'integer'), started INTEGER, "
                + "note TEXT)" + Self.copy),
        Self.migration("DROP TABLE setting", destructive: true),
        Self.migration("ALTER TABLE workout DROP COLUMN note", destructive: true),
    ])
    func theSameMigrationMadeSafeIsNotReported(migration: String) throws {
        let result = try Self.lint(migration)
        #expect(result.status == 0)
        #expect(result.stdout == "Workouts: 2 version(s), nothing found\n", "\(result.stdout) \(result.stderr)")
    }

    @Test func catalogCheckAndAddVersionReportTheErrorsLintFinds() throws {
        let unique = Self.migration("CREATE UNIQUE INDEX workout_name ON workout(name)")
        let finding =
            "documents/Workouts.sqlite, migration m1, table workout: CREATE UNIQUE INDEX on name fails: its values repeat"
        let checked = try Self.lint(unique, command: ["catalog", "check", "Workouts"])
        #expect(checked.status == 1 && checked.stdout.contains("v2: " + finding), "\(checked.stdout) \(checked.stderr)")
        let added = try Self.lint(
            unique, command: ["catalog", "add-version", "Workouts", "v2", "--plan", "v1-to-v2.json"])
        #expect(added.status == 1 && added.stdout.contains("v2: " + finding), "\(added.stdout) \(added.stderr)")

        let safe = try Self.lint(
            Self.migration("CREATE INDEX workout_name ON workout(name)"), command: ["catalog", "check", "Workouts"])
        #expect(safe.status == 0, "\(safe.stdout) \(safe.stderr)")
    }

    @Test func aRebuildOfALargeTableIsAWarningWithItsEstimatedTime() throws {
        let rebuild = Self.migration(
            "CREATE TABLE w2(id INTEGER PRIMARY KEY, name TEXT, minutes INTEGER, started INTEGER, note TEXT); "
                + "INSERT INTO w2 SELECT * FROM workout; DROP TABLE workout; ALTER TABLE w2 RENAME TO workout")
        let small = try Self.lint(rebuild)
        #expect(
            small.status == 0 && small.stdout == "Workouts: 2 version(s), nothing found\n",
            "\(small.stdout) \(small.stderr)")

        let large = try Self.lint(rebuild) { schema in
            // The captured workout table, 3 GB as on a heavy user's device.
            let replaced = schema.replacingOccurrences(
                of: #""bytes" : \d+,(\s*"columns"[^\]]*\][^}]*"rows" : 3\b)"#,
                with: #""bytes" : 3000000000,$1"#, options: .regularExpression)
            #expect(replaced != schema)
            return replaced
        }
        #expect(large.status == 0, "a warning alone is not a failure: \(large.stderr)")
        #expect(
            large.stdout.hasPrefix(
                "v2: warning: documents/Workouts.sqlite, migration m1, table workout: the table is rebuilt (copied row by row): "
                    + "about 10.0 s for its "),
            "\(large.stdout) \(large.stderr)")
    }
}
