import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// A Workouts app's catalog, edited by hand with a mistake, and the catalog commands that must
/// keep their word: refused in one sentence naming the file, nothing written.
@Suite struct StrictCatalogTests {
    /// A scratch folder holding the `Workouts` catalog captured from a real store (v1).
    static func workoutsCatalog() throws -> TemporaryDirectory {
        let scratch = try capturedCatalog(
            "Workouts",
            storeMadeBy: """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("create table workout(id integer primary key autoincrement, name text, minutes integer check (minutes > 0))")
            c.execute("create table setting(key text primary key, value text)")
            c.executemany("insert into workout(name, minutes) values (?, ?)", [("run", 30), ("swim", 45), ("row", 20)])
            c.commit()
            """)
        return scratch
    }

    static func edit(_ file: URL, _ change: (String) -> String) throws {
        let text = try String(contentsOf: file, encoding: .utf8)
        let changed = change(text)
        #expect(changed != text)
        try Data(changed.utf8).write(to: file)
    }

    @Test func aTruncatedCatalogIsReportedAsTruncatedAtItsLineAndColumn() throws {
        let scratch = try Self.workoutsCatalog()
        let file = scratch.url.appending(path: "Workouts/catalog.json")
        let text = try String(contentsOf: file, encoding: .utf8)
        try Data(text.utf8.prefix(text.utf8.count / 2)).write(to: file)

        let shown = try runProcess(backstageExecutable, ["catalog", "show", "Workouts"], currentDirectory: scratch.url)
        #expect(shown.status == 3)
        #expect(
            shown.stderr.hasPrefix("error: the catalog file \(file.path) is not valid: the file ends early at line "),
            "\(shown.stderr)")
        #expect(shown.stderr.contains("is it truncated?") && !shown.stderr.contains("format version"))
        let checked = try runProcess(
            backstageExecutable, ["catalog", "check", "Workouts"], currentDirectory: scratch.url)
        #expect(
            checked.status == 1 && checked.stdout.contains("is it truncated?"), "\(checked.stdout) \(checked.stderr)")
    }

    @Test func anUnknownKeyInTheCatalogOrASchemaIsRefusedNamingItsPath() throws {
        let scratch = try Self.workoutsCatalog()
        let manifest = scratch.url.appending(path: "Workouts/catalog.json")
        let original = try Data(contentsOf: manifest)
        try Self.edit(manifest) { $0.replacingOccurrences(of: #""writable" : true"#, with: #""writeable" : true"#) }
        let shown = try runProcess(backstageExecutable, ["catalog", "show", "Workouts"], currentDirectory: scratch.url)
        #expect(shown.status == 3)
        #expect(
            shown.stderr.hasPrefix(
                #"error: the catalog file \#(manifest.path) is not valid: unknown key "writeable" in versions[0].stores[0] (line "#
            ),
            "\(shown.stderr)")

        try original.write(to: manifest)
        let schema = scratch.url.appending(path: "Workouts/stores/v1/documents-Workouts.sqlite.json")
        try Self.edit(schema) { $0.replacingOccurrences(of: #""pageSize""#, with: #""pagesize" : 4096, "pageSize""#) }
        let checked = try runProcess(
            backstageExecutable, ["catalog", "check", "Workouts"], currentDirectory: scratch.url)
        #expect(checked.status == 1)
        #expect(
            checked.stdout.contains(
                #"v1: \#(schema.path) is not a valid store schema: unknown key "pagesize" at the top level"#),
            "\(checked.stdout)")
    }

    @Test func twoVersionsOfOneNameAreAnErrorInEveryCommand() throws {
        let scratch = try Self.workoutsCatalog()
        let manifest = scratch.url.appending(path: "Workouts/catalog.json")
        let made = try PythonSQLite.run(
            """
            import json, sys
            m = json.load(open(sys.argv[1]))
            m["versions"].append(dict(m["versions"][0]))
            json.dump(m, open(sys.argv[1], "w"), indent=1)
            """, [manifest.path])
        #expect(made.status == 0)
        let sentence =
            "the catalog file \(manifest.path) is not valid: versions[1].name v1 is also the name of versions[0]: each version has its own name"

        let checked = try runProcess(
            backstageExecutable, ["catalog", "check", "Workouts"], currentDirectory: scratch.url)
        #expect(checked.status == 1 && checked.stdout == sentence + "\n", "\(checked.stdout)")
        for arguments in [
            ["catalog", "show", "Workouts"], ["fixture", "out", "--catalog", "Workouts", "--layout", "v1"],
        ] {
            let refused = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
            #expect(refused.status == 3 && refused.stderr == "error: \(sentence)\n", "\(arguments): \(refused.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.url.appending(path: "out").path))
    }

    @Test(arguments: ["../../escaped-v5", "v2/../../x", ".hidden", ""])
    func aVersionNameThatWouldLeaveTheCatalogFolderIsAUsageError(name: String) throws {
        let scratch = try Self.workoutsCatalog()
        let plan = scratch.url.appending(path: "plan.json")
        try Data(
            #"{"name": "up", "steps": [{"relocate": {"from": "documents/Workouts.sqlite", "to": "applicationSupport/Workouts.sqlite"}}]}"#
                .utf8
        ).write(to: plan)
        let before = snapshot(scratch.url)

        let refused = try runProcess(
            backstageExecutable, ["catalog", "add-version", "Workouts", name, "--plan", "plan.json"],
            currentDirectory: scratch.url)

        #expect(refused.status == 2)
        #expect(
            refused.stderr.hasPrefix(
                "error: the version name \(name) is not a version name: use up to 64 letters, digits,"),
            "\(refused.stderr)")
        #expect(snapshot(scratch.url) == before, "nothing written, inside the catalog or outside it")
        let initialized = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Other", "--from", "Pulled/Workouts.sqlite", "--at", "documents/W.sqlite",
                "--version", name,
            ], currentDirectory: scratch.url)
        #expect(
            initialized.status == 2
                && !FileManager.default.fileExists(atPath: scratch.url.appending(path: "Other").path))
        #expect(initialized.stderr.contains("is not a version name"), "catalog init's own refusal: \(initialized.stderr)")
        let rootOnly = try runProcess(
            backstageExecutable, ["catalog", "init", "Other", "--from", "Pulled/Workouts.sqlite", "--at", "documents"],
            currentDirectory: scratch.url)
        #expect(rootOnly.status == 2 && rootOnly.stderr.hasPrefix("error: --at documents does not name a store"), "\(rootOnly.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.url.appending(path: "Other").path))
    }

    /// `--version NAME` is catalog init's, though the root has a `--version` flag of its own.
    @Test func catalogInitNamesTheCapturedVersionAfterVersion() throws {
        let scratch = try Self.workoutsCatalog()
        let initialized = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Named", "--from", "Pulled/Workouts.sqlite", "--at", "documents/W.sqlite",
                "--version", "1.0",
            ], currentDirectory: scratch.url)
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let manifest = try CatalogFolder(at: scratch.url.appending(path: "Named")).manifest
        #expect(manifest.versions.map(\.name) == ["1.0"])
        #expect(try runProcess(backstageExecutable, ["--version"]).stdout == "0.1.0\n")

        // simulate's path defaults to the catalog's first and last versions, whatever their names.
        try Data(
            #"""
            {"name": "1.0-to-2.0", "version": "2.0", "steps": [
              {"relocate": {"from": "documents/W.sqlite", "to": "applicationSupport/W.sqlite"}}]}
            """#.utf8
        ).write(to: scratch.url.appending(path: "plan.json"))
        let added = try runProcess(
            backstageExecutable, ["catalog", "add-version", "Named", "2.0", "--plan", "plan.json"],
            currentDirectory: scratch.url)
        #expect(added.status == 0, "\(added.stderr)")
        let simulated = try runProcess(
            backstageExecutable,
            ["simulate", "--catalog", "Named", "--sizes", "50KB", "--states", "clean", "--crash-points", "none"],
            currentDirectory: scratch.url)
        #expect(simulated.status == 0 && simulated.stdout.hasPrefix("1.0 → 2.0: 1 runs, 1 passed"), "\(simulated.stdout) \(simulated.stderr)")
    }

    @Test func aPlanThatFailsOnTheVersionsStoresIsExit1NamingThePlanNeverATemporary() throws {
        let scratch = try Self.workoutsCatalog()
        let plan = scratch.url.appending(path: "v1-to-v2.json")
        try Data(
            #"""
            {"name": "v1-to-v2", "steps": [
              {"relocate": {"from": "documents/Workouts.sqlite", "to": "applicationSupport/Workouts.sqlite"}},
              {"migrateSchema": {"store": "applicationSupport/Workouts.sqlite", "migrations": [{"id": "v2-kcal", "sql": "ALTER TABLE workouts ADD COLUMN kcal INTEGER"}]}}]}
            """#.utf8
        ).write(to: plan)
        let before = snapshot(scratch.url.appending(path: "Workouts"))

        let refused = try runProcess(
            backstageExecutable, ["catalog", "add-version", "Workouts", "v2", "--plan", "v1-to-v2.json"],
            currentDirectory: scratch.url)

        #expect(refused.status == 1, "as its help says: \(refused.stderr)")
        #expect(
            refused.stdout
                == "v2: the plan \(plan.path) fails on a container of v1: migration v2-kcal would fail on applicationSupport/Workouts.sqlite "
                + "(tried on an empty copy of its schema as it will be then): no such table: workouts; nothing was changed: correct the plan\n")
        #expect(!refused.stdout.contains("backstage-add-version") && !refused.stdout.contains("container/Library"))
        #expect(snapshot(scratch.url.appending(path: "Workouts")) == before)
        let help = try runProcess(backstageExecutable, ["catalog", "add-version", "--help"])
        let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(
            words.contains("fails on the generated container (a migration naming a missing table, say)")
                && words.contains("printed (exit 1)"))
    }

    @Test func onlyTheCatalogFileIsTheCatalogFile() throws {
        let scratch = try Self.workoutsCatalog()
        let plan = scratch.url.appending(path: "v1-to-v2.json")
        try Data(
            #"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/Workouts.sqlite", "to": "applicationSupport/Workouts.sqlite"}}]}"#
                .utf8
        ).write(to: plan)

        let expect = try runProcess(
            backstageExecutable,
            [
                "catalog", "add-version", "Workouts", "v2", "--plan", "v1-to-v2.json",
                "--expect", "applicationSupport/Workouts.sqlite=fresh.sql",
            ], currentDirectory: scratch.url)
        #expect(
            expect.status == 3
                && expect.stderr
                    == "error: cannot read \(scratch.url.appending(path: "fresh.sql").path): there is no such file\n",
            "\(expect.stderr)")
        let duplicate = try runProcess(
            backstageExecutable, ["catalog", "add-version", "Workouts", "v1", "--plan", "v1-to-v2.json"],
            currentDirectory: scratch.url)
        #expect(
            duplicate.status == 3
                && duplicate.stderr.contains(
                    "already has a version v1 (replace it, while it has not shipped, with --replace)")
        )
        try Data("print('hello')\n".utf8).write(to: scratch.url.appending(path: "script.py"))
        let inspected = try runProcess(
            backstageExecutable, ["inspect", "script.py", "--catalog", "Workouts"], currentDirectory: scratch.url)
        #expect(inspected.status == 3 && inspected.stderr.contains("script.py: it is not a SQLite database"))
        for result in [expect, duplicate, inspected] {
            #expect(!result.stderr.contains("cannot read the catalog file"), "\(result.stderr)")
        }
    }

    @Test(arguments: [
        (
            "DELETE FROM workout",
            #"v1: check "kept" is not a read-only query: a check is one SELECT, which never changes the store"#
        ),
        (
            "SELECT count(*) FROM workout; DELETE FROM workout",
            #"v1: check "kept" holds more than one statement: a check is one SELECT"#
        ),
        (
            "PRAGMA user_version = 7",
            #"v1: check "kept" is not a read-only query: a check is one SELECT, which never changes the store"#
        ),
        (
            "SELECT count(*) FROM workouts",
            #"v1: check "kept" does not compile against documents/Workouts.sqlite: no such table: workouts"#
        ),
    ])
    func aCheckThatIsNotOneReadOnlySelectIsRefusedAndNotWritten(sql: String, sentence: String) throws {
        let scratch = try Self.workoutsCatalog()
        let manifest = try Data(contentsOf: scratch.url.appending(path: "Workouts/catalog.json"))

        let refused = try runProcess(
            backstageExecutable,
            [
                "catalog", "add-check", "Workouts", "v1", "kept", "--store", "documents/Workouts.sqlite",
                "--sql", sql, "--equals", "3",
            ], currentDirectory: scratch.url)

        #expect(refused.status == 1)
        #expect(refused.stdout == sentence + "\n", "\(refused.stdout) \(refused.stderr)")
        #expect(try Data(contentsOf: scratch.url.appending(path: "Workouts/catalog.json")) == manifest)
    }

    @Test func aCheckOfAnExistingNameIsKeptUnlessReplacedAndTheReplacedOneIsNamed() throws {
        let scratch = try Self.workoutsCatalog()
        let add = ["catalog", "add-check", "Workouts", "v1", "kept", "--store", "documents/Workouts.sqlite"]
        let first = try runProcess(
            backstageExecutable, add + ["--sql", "SELECT count(*) FROM workout", "--unchanged"],
            currentDirectory: scratch.url)
        #expect(
            first.status == 0 && first.stdout == "v1: check \"kept\" added (1 check(s))\n",
            "\(first.stdout) \(first.stderr)")
        let manifest = try Data(contentsOf: scratch.url.appending(path: "Workouts/catalog.json"))

        let weaker = try runProcess(
            backstageExecutable, add + ["--sql", "SELECT 1", "--unchanged"], currentDirectory: scratch.url)
        #expect(weaker.status == 1)
        #expect(
            weaker.stdout
                == #"v1: it already has a check "kept" (SELECT count(*) FROM workout on documents/Workouts.sqlite, unchanged by the upgrade): "#
                + "give another name, or --replace to replace it\n")
        #expect(try Data(contentsOf: scratch.url.appending(path: "Workouts/catalog.json")) == manifest)

        let replaced = try runProcess(
            backstageExecutable,
            add + ["--sql", "SELECT count(*) FROM workout WHERE minutes > 0", "--equals", "3", "--replace"],
            currentDirectory: scratch.url)
        #expect(replaced.status == 0)
        #expect(
            replaced.stdout
                == #"v1: check "kept" replaced (it was SELECT count(*) FROM workout on documents/Workouts.sqlite, unchanged by the upgrade; "#
                + "1 check(s))\n")
        let text = try String(contentsOf: scratch.url.appending(path: "Workouts/catalog.json"), encoding: .utf8)
        #expect(text.contains("WHERE minutes > 0") && text.components(separatedBy: #""name" : "kept""#).count == 2)
    }

    @Test func aHandWrittenCheckThatWritesIsAProblemOfCatalogCheck() throws {
        let scratch = try Self.workoutsCatalog()
        try Self.edit(scratch.url.appending(path: "Workouts/catalog.json")) { text in
            text.replacingOccurrences(
                of: #""name" : "v1","#,
                with: #""name" : "v1", "checks": [{"name": "wipe", "store": "documents/Workouts.sqlite", "#
                    + #""sql": "DELETE FROM workout", "equals": 0}],"#)
        }
        let checked = try runProcess(
            backstageExecutable, ["catalog", "check", "Workouts"], currentDirectory: scratch.url)
        #expect(checked.status == 1)
        #expect(
            checked.stdout.contains(#"v1: check "wipe" is not a read-only query"#),
            "\(checked.stdout) \(checked.stderr)")
    }
}
