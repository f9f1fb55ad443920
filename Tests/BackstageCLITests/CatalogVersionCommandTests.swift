import BackstageTestSupport
import Foundation
import Testing

/// `catalog add-version --expect`, `--replace`, `add-check` and `simulate --junit` as a user runs them.
@Suite struct CatalogVersionCommandTests {
    static let committed = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "Catalogs/Cookbook")

    static let plan = #"""
        {"name": "v1-to-v2", "version": "v2", "steps": [
          {"relocate": {"from": "documents/Cookbook.sqlite", "to": "applicationSupport/Cookbook.sqlite"}},
          {"migrateSchema": {"store": "applicationSupport/Cookbook.sqlite", "migrations": [
            {"id": "v2-rating", "sql": "ALTER TABLE recipe ADD COLUMN rating INTEGER NOT NULL DEFAULT 0; CREATE INDEX recipe_rating ON recipe(rating)"}]}}
        ]}
        """#

    /// A v1 catalog of the Cookbook store, and the store a fresh v2 install creates (made by
    /// running v2's schema code: here, the v1 schema with the column and index declared).
    static func setUp(_ scratch: TemporaryDirectory) throws {
        try CookbookStore.make(at: scratch.url.appending(path: "Pulled/Cookbook.sqlite"))
        let initialized = try runProcess(backstageExecutable, ["catalog", "init", "Cookbook", "--from", "Pulled/Cookbook.sqlite", "--at", "documents/Cookbook.sqlite"], currentDirectory: scratch.url)
        #expect(initialized.status == 0, "\(initialized.stderr)")
        try Data(plan.utf8).write(to: scratch.url.appending(path: "v1-to-v2.json"))
        let fresh = try PythonSQLite.run("""
            import sqlite3, sys
            v1 = sqlite3.connect(sys.argv[1])
            statements = [sql for (sql,) in v1.execute("select sql from sqlite_schema where sql is not null and name not like 'recipe_search_%' order by rowid")]
            c = sqlite3.connect(sys.argv[2])
            for sql in statements:
                if sql.startswith("CREATE TABLE recipe "):
                    sql = sql.replace("photo BLOB)", "photo BLOB, rating INTEGER NOT NULL DEFAULT 0)")
                    assert "rating" in sql
                c.execute(sql)
            c.execute("CREATE INDEX recipe_rating ON recipe(rating)")
            c.commit()
            """, [scratch.url.appending(path: "Pulled/Cookbook.sqlite").path, scratch.url.appending(path: "fresh-v2.sqlite").path])
        #expect(fresh.status == 0, "\(fresh.stderr)")
    }

    @Test func aFreshInstallStoreEqualToThePlansResultIsAcceptedAndKept() throws {
        let scratch = try TemporaryDirectory()
        try Self.setUp(scratch)
        let added = try runProcess(backstageExecutable, ["catalog", "add-version", "Cookbook", "v2", "--plan", "v1-to-v2.json", "--expect", "applicationSupport/Cookbook.sqlite=fresh-v2.sqlite"], currentDirectory: scratch.url)
        #expect(added.status == 0, "\(added.stdout) \(added.stderr)")
        let kept = scratch.url.appending(path: "Cookbook/stores/v2/applicationSupport-Cookbook.sqlite.fresh-install.sql")
        let sql = try String(contentsOf: kept, encoding: .utf8)
        #expect(sql.contains("CREATE INDEX recipe_rating ON recipe(rating);") && sql.contains("rating INTEGER NOT NULL DEFAULT 0"))
        let manifest = try String(contentsOf: scratch.url.appending(path: "Cookbook/catalog.json"), encoding: .utf8)
        #expect(manifest.contains(#""freshInstall" : "stores/v2/applicationSupport-Cookbook.sqlite.fresh-install.sql""#) && manifest.contains(#""frozen""#))
        #expect(try runProcess(backstageExecutable, ["catalog", "check", "Cookbook"], currentDirectory: scratch.url).status == 0)
    }

    @Test(arguments: [
        ("; CREATE INDEX recipe_rating ON recipe(rating)", "", "index recipe_rating: missing from the upgraded store"),
        ("NOT NULL DEFAULT 0;", "NOT NULL DEFAULT 1;", "table recipe: column rating: default 0 in a fresh install, 1 in the upgraded store"),
    ])
    func aPlanThatDiffersFromAFreshInstallIsRefusedNamingTheDifference(original: String, replacement: String, named: String) throws {
        let scratch = try TemporaryDirectory()
        try Self.setUp(scratch)
        let wrong = Self.plan.replacingOccurrences(of: original, with: replacement)
        #expect(wrong != Self.plan)
        try Data(wrong.utf8).write(to: scratch.url.appending(path: "v1-to-v2.json"))
        let manifest = try Data(contentsOf: scratch.url.appending(path: "Cookbook/catalog.json"))
        let refused = try runProcess(backstageExecutable, ["catalog", "add-version", "Cookbook", "v2", "--plan", "v1-to-v2.json", "--expect", "applicationSupport/Cookbook.sqlite=fresh-v2.sqlite"], currentDirectory: scratch.url)
        #expect(refused.status == 1)
        #expect(refused.stdout == "v2: applicationSupport/Cookbook.sqlite differs from a fresh install (\(scratch.url.appending(path: "fresh-v2.sqlite").path)): \(named)\n")
        // Nothing written.
        #expect(try Data(contentsOf: scratch.url.appending(path: "Cookbook/catalog.json")) == manifest)
        #expect(!FileManager.default.fileExists(atPath: scratch.url.appending(path: "Cookbook/stores/v2").path))
        #expect(!FileManager.default.fileExists(atPath: scratch.url.appending(path: "Cookbook/plans").path))
    }

    @Test func anExpectationForAStoreThePlanDoesNotLeaveIsRefused() throws {
        let scratch = try TemporaryDirectory()
        try Self.setUp(scratch)
        let refused = try runProcess(backstageExecutable, ["catalog", "add-version", "Cookbook", "v2", "--plan", "v1-to-v2.json", "--expect", "caches/Cookbook.sqlite=fresh-v2.sqlite"], currentDirectory: scratch.url)
        #expect(refused.status == 1)
        #expect(refused.stdout.contains("--expect names caches/Cookbook.sqlite, but the plan leaves no store there (it leaves applicationSupport/Cookbook.sqlite)"))
        let malformed = try runProcess(backstageExecutable, ["catalog", "add-version", "Cookbook", "v2", "--plan", "v1-to-v2.json", "--expect", "fresh-v2.sqlite"], currentDirectory: scratch.url)
        #expect(malformed.status == 2 && malformed.stderr.contains("write LOCATION=FILE"))
    }

    @Test func aShippedVersionIsNeverReplacedTheNewestIs() throws {
        let scratch = try TemporaryDirectory()
        let catalog = scratch.url.appending(path: "Cookbook")
        try FileManager.default.copyItem(at: Self.committed, to: catalog)
        let plan = catalog.appending(path: "plans/v1-to-v2.json")
        let shipped = try runProcess(backstageExecutable, ["catalog", "add-version", catalog.path, "v2", "--plan", plan.path, "--replace"])
        #expect(shipped.status == 3)
        #expect(shipped.stderr.contains("v2 has shipped (v3 follows it) and never changes: a correction ships as a new version"))
        let duplicate = try runProcess(backstageExecutable, ["catalog", "add-version", catalog.path, "v3", "--plan", catalog.appending(path: "plans/v2-to-v3.json").path])
        #expect(duplicate.status == 3 && duplicate.stderr.contains("--replace"))

        // The newest, not shipped yet, is replaced: a changed plan, a fingerprint to match.
        let edited = scratch.url.appending(path: "v2-to-v3.json")
        let text = try String(contentsOf: catalog.appending(path: "plans/v2-to-v3.json"), encoding: .utf8)
        try Data(text.replacingOccurrences(of: "rating = 3", with: "rating = 2").utf8).write(to: edited)
        let replaced = try runProcess(backstageExecutable, ["catalog", "add-version", catalog.path, "v3", "--plan", edited.path, "--replace",
                                                             "--expect", "applicationSupport/Cookbook.sqlite=" + catalog.appending(path: "stores/v3/applicationSupport-Cookbook.sqlite.fresh-install.sql").path])
        #expect(replaced.status == 0, "\(replaced.stdout) \(replaced.stderr)")
        #expect(try String(contentsOf: catalog.appending(path: "plans/v2-to-v3.json"), encoding: .utf8).contains("rating = 2"))
        let check = try runProcess(backstageExecutable, ["catalog", "check", catalog.path])
        #expect(check.status == 0, "\(check.stdout)")
    }

    @Test func simulateWritesJUnitNamingTheBrokenCheck() throws {
        let scratch = try TemporaryDirectory()
        let catalog = scratch.url.appending(path: "Cookbook")
        try FileManager.default.copyItem(at: Self.committed, to: catalog)
        let forgetful = scratch.url.appending(path: "forgetful.json")
        try Data(#"{"name": "v2-to-v3", "steps": [{"migrateSchema": {"store": "applicationSupport/Cookbook.sqlite", "migrations": [{"id": "v3-rate-all", "sql": "CREATE INDEX recipe_best ON recipe(rating) WHERE rating >= 4"}]}}]}"#.utf8).write(to: forgetful)
        let result = try runProcess(backstageExecutable, ["simulate", "--catalog", catalog.path, "--from", "v1", "--to", "v3", "--sizes", "200KB", "--states", "clean",
                                                           "--crash-points", "2", "--plan", catalog.appending(path: "plans/v1-to-v2.json").path, "--plan", forgetful.path,
                                                           "--junit", "report.xml"], currentDirectory: scratch.url)
        #expect(result.status == 1)
        #expect(result.stdout.contains("2 runs, 0 passed, 2 failed") && result.stdout.contains("check \"every recipe rated\" expects 0, found "))
        let xml = try String(contentsOf: scratch.url.appending(path: "report.xml"), encoding: .utf8)
        #expect(xml.contains(#"<testsuite name="Cookbook v1 → v3" tests="2" failures="2""#))
        #expect(xml.components(separatedBy: #"<failure message="check &quot;every recipe rated&quot; expects 0, found "#).count == 3, "\(xml)")
    }
}
