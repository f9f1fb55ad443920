import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// Fresh install equals upgraded install, shipped plans frozen, data checks: on the committed
/// Cookbook catalog (Tests/Catalogs/Cookbook) and on schemas written here.
@Suite struct TrustedVersionsTests {
    static let committed = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "Catalogs/Cookbook")

    /// A private copy of the Cookbook catalog, to change.
    static func cookbook(in scratch: TemporaryDirectory) throws -> CatalogFolder {
        let url = scratch.url.appending(path: "Cookbook")
        try FileManager.default.copyItem(at: committed, to: url)
        return try CatalogFolder(at: url)
    }

    static func schema(_ sql: String, in scratch: TemporaryDirectory) throws -> SchemaDescription {
        let file = scratch.url.appending(path: "\(UUID().uuidString).sql")
        try Data(sql.utf8).write(to: file)
        return try SchemaDescription(contentsOf: file)
    }

    static let base = """
        CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE recipe (id INTEGER PRIMARY KEY, authorId INTEGER NOT NULL REFERENCES author(id) ON DELETE CASCADE,
          title TEXT NOT NULL COLLATE NOCASE, rating INTEGER NOT NULL DEFAULT 0, note TEXT);
        CREATE INDEX recipe_best ON recipe(rating DESC) WHERE rating >= 4;
        CREATE UNIQUE INDEX recipe_title ON recipe(authorId, note);
        CREATE TABLE tag (recipeId INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (recipeId, name)) WITHOUT ROWID;
        CREATE VIRTUAL TABLE search USING fts5(title, body);
        CREATE TRIGGER recipe_touch AFTER UPDATE ON recipe BEGIN UPDATE author SET name = name WHERE id = NEW.authorId; END;
        CREATE VIEW best AS SELECT * FROM recipe WHERE rating >= 4;
        """

    @Test func theSameSchemaWrittenAnotherWayHasNoDifference() throws {
        let scratch = try TemporaryDirectory()
        // Quoting, case, whitespace, comments, column order (as ALTER TABLE ADD COLUMN leaves it), IF NOT EXISTS.
        let rewritten = """
            create table "author" ("id" integer primary key, [name] text not null unique);
            CREATE TABLE IF NOT EXISTS `recipe` (id INTEGER PRIMARY KEY, authorId INTEGER NOT NULL REFERENCES "author"(id) ON DELETE CASCADE,
              title TEXT NOT NULL COLLATE nocase, note TEXT);
            ALTER TABLE recipe ADD COLUMN rating integer not null default 0;
            CREATE INDEX recipe_best ON recipe (rating desc)  WHERE rating>=4 ;
            CREATE UNIQUE INDEX "recipe_title" ON recipe(authorId,note);
            CREATE TABLE tag (recipeId INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (recipeId, name)) WITHOUT ROWID;
            CREATE VIRTUAL TABLE search USING FTS5(title,body);
            -- a comment
            CREATE TRIGGER recipe_touch AFTER UPDATE ON recipe BEGIN
              UPDATE author SET name = name WHERE id = NEW.authorId;
            END;
            CREATE VIEW best AS SELECT * FROM recipe /* the good ones */ WHERE rating >= 4;
            """
        let differences = try Self.schema(Self.base, in: scratch).differences(from: try Self.schema(rewritten, in: scratch))
        #expect(differences == [])
    }

    /// Each change a forgotten or edited migration leaves, named by what differs.
    @Test(arguments: [
        ("CREATE INDEX recipe_best ON recipe(rating DESC) WHERE rating >= 4;", "", "index recipe_best: missing from the upgraded store"),
        ("rating INTEGER NOT NULL DEFAULT 0", "rating INTEGER NOT NULL DEFAULT 1", "table recipe: column rating: default 0 in a fresh install, 1 in the upgraded store"),
        ("rating INTEGER NOT NULL DEFAULT 0", "rating INTEGER DEFAULT 0", "table recipe: column rating: NOT NULL set in a fresh install, not set in the upgraded store"),
        ("rating INTEGER NOT NULL DEFAULT 0", "rating TEXT NOT NULL DEFAULT 0", "table recipe: column rating: type INTEGER in a fresh install, TEXT in the upgraded store"),
        ("title TEXT NOT NULL COLLATE NOCASE", "title TEXT NOT NULL", "table recipe: column title: collation nocase in a fresh install, binary in the upgraded store"),
        (", note TEXT)", ", note TEXT, extra BLOB)", "table recipe: column extra only in the upgraded store"),
        ("WHERE rating >= 4;\nCREATE UNIQUE", "WHERE rating >= 3;\nCREATE UNIQUE", "index recipe_best: partial condition WHERE rating >= 4 in a fresh install, WHERE rating >= 3 in the upgraded store"),
        ("CREATE UNIQUE INDEX recipe_title", "CREATE INDEX recipe_title", "index recipe_title: UNIQUE in a fresh install, not in the upgraded store"),
        ("REFERENCES author(id) ON DELETE CASCADE", "", "table recipe: foreign key (authorId) REFERENCES author(id) ON DELETE CASCADE missing from the upgraded store"),
        ("name TEXT NOT NULL UNIQUE", "name TEXT NOT NULL", "table author: UNIQUE (name) missing from the upgraded store"),
        (") WITHOUT ROWID", ")", "table tag: WITHOUT ROWID in a fresh install only"),
        ("WHERE id = NEW.authorId", "WHERE id = OLD.authorId", "trigger recipe_touch: defined as"),
        ("SELECT * FROM recipe WHERE rating >= 4", "SELECT * FROM recipe WHERE rating > 4", "view best: defined as"),
        ("fts5(title, body)", "fts5(title, body, tags)", "virtual table search: defined as"),
    ])
    func eachDifferenceIsNamed(expected: String, upgraded: String, named: String) throws {
        let scratch = try TemporaryDirectory()
        let changed = Self.base.replacingOccurrences(of: expected, with: upgraded)
        #expect(changed != Self.base)
        let differences = try Self.schema(Self.base, in: scratch).differences(from: try Self.schema(changed, in: scratch))
        #expect(differences.count == 1, "\(differences)")
        #expect(differences.first?.description.hasPrefix(named) == true, "\(differences)")
    }

    @Test func aStoreFileAndItsSQLDescribeTheSameSchema() throws {
        let scratch = try TemporaryDirectory()
        let store = scratch.url.appending(path: "Fresh.sqlite")
        try CookbookStore.make(at: store)
        let fromStore = try SchemaDescription(contentsOf: store)
        #expect(fromStore.tables["recipe"] != nil && fromStore.virtualTables["recipe_search"] != nil && fromStore.tables["recipe_search_data"] == nil)
        let captured = try SchemaDescription(StoreCapture.capture(StoreFileSet(main: store)))
        #expect(fromStore.differences(from: captured) == [])
        #expect(throws: CatalogError.self) { try SchemaDescription(contentsOf: scratch.url.appending(path: "missing.sqlite")) }
    }

    @Test func theCommittedCatalogHasNoProblem() throws {
        let catalog = try CatalogFolder(at: Self.committed)
        #expect(CatalogCheck.problems(in: catalog) == [])
        #expect(catalog.manifest.versions.map(\.name) == ["v1", "v2", "v3"])
        #expect(catalog.manifest.versions.dropFirst().allSatisfy { $0.frozen != nil && $0.stores.allSatisfy { $0.freshInstall != nil } })
    }

    @Test func editingAShippedPlanFailsTheCheckNamingTheVersion() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.cookbook(in: scratch)
        let file = try #require(catalog.planURL(of: catalog.version("v2")))
        let original = try String(contentsOf: file, encoding: .utf8)
        // Reformatting is no change.
        try Data(original.replacingOccurrences(of: "\n", with: "\n   ").utf8).write(to: file)
        #expect(CatalogCheck.problems(in: catalog) == [])
        // Editing a migration is.
        try Data(original.replacingOccurrences(of: "ADD COLUMN rating INTEGER", with: "ADD COLUMN rating INTEGER DEFAULT 3").utf8).write(to: file)
        let problems = CatalogCheck.problems(in: catalog)
        #expect(problems.count == 1)
        #expect(problems.first?.version == "v2")
        #expect(problems.first?.message.contains("has shipped") == true && problems.first?.message.contains("migration v2-rating of applicationSupport/Cookbook.sqlite was edited") == true)
        #expect(problems.first?.message.contains("ship the correction as a new version") == true)
    }

    @Test func editingTheNewestPlanAsksForItToBeAddedAgain() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.cookbook(in: scratch)
        let file = try #require(catalog.planURL(of: catalog.version("v3")))
        let plan = try String(contentsOf: file, encoding: .utf8)
        try Data(plan.replacingOccurrences(of: "rating = 3", with: "rating = 2").utf8).write(to: file)
        let problems = CatalogCheck.problems(in: catalog)
        #expect(problems.map(\.version) == ["v3"])
        #expect(problems.first?.message.contains("--replace") == true)
    }

    @Test func aFreshInstallThatNoLongerMatchesIsAProblem() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.cookbook(in: scratch)
        let store = try catalog.version("v3").stores[0]
        let file = catalog.url.appending(path: try #require(store.freshInstall))
        let sql = try String(contentsOf: file, encoding: .utf8)
        try Data((sql + "CREATE INDEX recipe_title ON recipe(title);\n").utf8).write(to: file)
        let problems = CatalogCheck.problems(in: catalog)
        #expect(problems.count == 1)
        #expect(problems.first?.description.contains("v3: applicationSupport/Cookbook.sqlite differs from a fresh install") == true
                && problems.first?.description.contains("index recipe_title: missing from the upgraded store") == true, "\(problems)")
    }

    @Test func aDataCheckThatDoesNotCompileIsAProblem() throws {
        let scratch = try TemporaryDirectory()
        var catalog = try Self.cookbook(in: scratch)
        catalog.manifest.versions[2].checks?.append(DataCheck(name: "typo", store: ContainerLocation(.applicationSupport, "Cookbook.sqlite"),
                                                              sql: "SELECT count(*) FROM recipes", expect: .equals(.integer(0))))
        catalog.manifest.versions[2].checks?.append(DataCheck(name: "elsewhere", store: ContainerLocation(.caches, "Cookbook.sqlite"),
                                                              sql: "SELECT 1", expect: .unchanged))
        let messages = CatalogCheck.problems(in: catalog).map(\.description)
        #expect(messages == ["v3: check \"typo\" does not compile against applicationSupport/Cookbook.sqlite: no such table: recipes",
                             "v3: check \"elsewhere\" queries caches/Cookbook.sqlite, which v3 does not have"])
    }

    /// A candidate v2→v3 plan that forgets to rate the unrated recipes, and one that drops them.
    @Test func aDataCheckAPlanBreaksFailsTheSimulationByName() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.cookbook(in: scratch)
        let forgetful = scratch.url.appending(path: "forgetful.json")
        try Data(#"{"name": "v2-to-v3", "version": "v3", "steps": [{"migrateSchema": {"store": "applicationSupport/Cookbook.sqlite", "migrations": [{"id": "v3-rate-all", "sql": "CREATE INDEX recipe_best ON recipe(rating) WHERE rating >= 4"}]}}]}"#.utf8).write(to: forgetful)
        let altering = scratch.url.appending(path: "altering.json")
        try Data(#"{"name": "v2-to-v3", "version": "v3", "steps": [{"migrateSchema": {"store": "applicationSupport/Cookbook.sqlite", "migrations": [{"id": "v3-rate-all", "sql": "UPDATE recipe SET rating = 3, servings = servings + 1 WHERE rating IS NULL; CREATE INDEX recipe_best ON recipe(rating) WHERE rating >= 4"}]}}]}"#.utf8).write(to: altering)
        let v1ToV2 = try #require(catalog.planURL(of: catalog.version("v2")))
        var simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: catalog)

        simulator.plans = [v1ToV2, forgetful]
        let forgot = try simulator.simulate(from: "v1", to: "v3", sizes: [200_000], states: [.clean], crashPoints: .none)
        #expect(forgot.count == 1)
        #expect(forgot.first?.failures.contains { $0.hasPrefix("check \"every recipe rated\" expects 0, found ") } == true, "\(forgot)")
        #expect(forgot.first?.failures.contains { $0.contains("recipes kept") } == false)

        simulator.plans = [v1ToV2, altering]
        let altered = try simulator.simulate(from: "v1", to: "v3", sizes: [200_000], states: [.clean], crashPoints: .none)
        #expect(altered.first?.failures.count == 1, "\(altered)")
        #expect(altered.first?.failures.first?.hasPrefix("check \"recipes kept\" changed: (") == true, "\(altered)")

        // A plan that leaves another schema than a fresh install's (no index) fails by schema.
        let noIndex = scratch.url.appending(path: "no-index.json")
        try Data(#"{"name": "v2-to-v3", "steps": [{"migrateSchema": {"store": "applicationSupport/Cookbook.sqlite", "migrations": [{"id": "v3-rate-all", "sql": "UPDATE recipe SET rating = 3 WHERE rating IS NULL"}]}}]}"#.utf8).write(to: noIndex)
        simulator.plans = [v1ToV2, noIndex]
        let unindexed = try simulator.simulate(from: "v1", to: "v3", sizes: [200_000], states: [.clean], crashPoints: .none)
        #expect(unindexed.first?.failures == ["schema of applicationSupport/Cookbook.sqlite differs from a fresh install: index recipe_best: missing from the upgraded store"])
    }

    @Test func junitHasOneCasePerRunWithTheBrokenInvariant() throws {
        let runs = [
            SimulationRun(from: "v1", to: "v3", size: 1000, state: .clean, crashPoint: .crashPoint(CrashPoint(.split, .verified)), crashed: true, reruns: 1, seconds: 0.5, exceedsBudget: false, failures: []),
            SimulationRun(from: "v1", to: "v3", size: 1000, state: .walPending, crashPoint: nil, crashed: false, reruns: 1, seconds: 0.25, exceedsBudget: false,
                          failures: ["check \"every recipe rated\" expects 0, found 12", "rows lost: <recipe> & \"more\""]),
        ]
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "report.xml")
        try Data(JUnitReport.xml(runs, suite: "Cookbook v1 → v3", seconds: 1).utf8).write(to: file)
        let parsed = try PythonSQLite.run("""
            import sys, xml.etree.ElementTree as E
            suite = E.parse(sys.argv[1]).getroot().find("testsuite")
            print(suite.get("tests"), suite.get("failures"))
            for case in suite.findall("testcase"):
                failure = case.find("failure")
                print(case.get("name"), "|", failure.get("message") if failure is not None else "ok", "|", failure.text if failure is not None else "")
            """, [file.path])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let lines = parsed.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "2 1")
        #expect(lines.dropFirst().first == "1000 bytes, clean, crash split:verified@1 | ok | ")
        #expect(lines.dropFirst(2).first == "1000 bytes, wal-pending, crash none | check \"every recipe rated\" expects 0, found 12 | check \"every recipe rated\" expects 0, found 12")
        #expect(lines.last == "rows lost: <recipe> & \"more\"")
    }
}
