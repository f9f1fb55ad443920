import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The DocC article "Bringing your own app", run as written: its plan and every `backstage`
/// command of its shell blocks, in order, on a Cookbook store made here the way the app makes it.
@Suite struct BringingYourOwnAppArticleTests {
    static let article = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Sources/BackstageHarness/BackstageHarness.docc/BringingYourOwnApp.md")

    /// The contents of the article's fenced blocks of `language`, in order.
    static func blocks(_ language: String) throws -> [String] {
        let text = try String(contentsOf: article, encoding: .utf8)
        var result: [String] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```\(language)" { current = [] } else if current != nil, line == "```" {
                result.append(current!.joined(separator: "\n"))
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        return result
    }

    /// Cookbook v1's store as the app writes it: foreign keys, CHECKs, WITHOUT ROWID, FTS5, a trigger, a view.
    static func makeCookbookStore(at url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let result = try PythonSQLite.run("""
            import sqlite3, random, sys
            random.seed(3)
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("pragma journal_mode=wal")
            c.executescript('''
            CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE recipe (id INTEGER PRIMARY KEY, authorId INTEGER NOT NULL REFERENCES author(id) ON DELETE CASCADE, title TEXT NOT NULL,
              servings INTEGER NOT NULL CHECK (servings BETWEEN 1 AND 24), favorite INTEGER NOT NULL DEFAULT 0 CHECK (favorite IN (0, 1)),
              createdAt REAL NOT NULL, photo BLOB);
            CREATE INDEX recipe_author ON recipe(authorId);
            CREATE TABLE ingredient (recipeId INTEGER NOT NULL REFERENCES recipe(id) ON DELETE CASCADE, position INTEGER NOT NULL,
              name TEXT NOT NULL, quantity TEXT, PRIMARY KEY (recipeId, position)) WITHOUT ROWID;
            CREATE VIRTUAL TABLE recipe_search USING fts5(title, body);
            CREATE TABLE history (id INTEGER PRIMARY KEY, recipeId INTEGER, action TEXT NOT NULL, at REAL NOT NULL);
            CREATE TRIGGER recipe_history AFTER INSERT ON recipe BEGIN INSERT INTO history(recipeId, action, at) VALUES (NEW.id, 'created', NEW.createdAt); END;
            CREATE VIEW favorites AS SELECT * FROM recipe WHERE favorite = 1;
            ''')
            c.execute("begin")
            for a in range(1, 21): c.execute("insert into author(name) values (?)", ("Chef %d" % a,))
            for r in range(1, 301):
                c.execute("insert into recipe(authorId, title, servings, favorite, createdAt, photo) values (?,?,?,?,?,?)",
                          (random.randint(1, 20), "Recipe %d" % r, random.randint(1, 12), random.randint(0, 1), 7e8 + r,
                           random.randbytes(random.randint(0, 3000)) if r % 3 else None))
                for p in range(1, random.randint(3, 9)):
                    c.execute("insert into ingredient values (?,?,?,?)", (r, p, "ingredient %d" % p, "%d cups" % p))
                c.execute("insert into recipe_search(title, body) values (?,?)", ("Recipe %d" % r, "mix stir bake serve " * random.randint(5, 40)))
            c.execute("commit")
            """, [url.path])
        guard result.status == 0 else { throw Failure(result.stderr) }
    }

    @Test func theArticlesCommandsWorkAsWritten() throws {
        let scratch = try TemporaryDirectory()
        try Self.makeCookbookStore(at: scratch.url.appending(path: "Pulled/Cookbook.sqlite"))
        let plans = try Self.blocks("json")
        #expect(plans.count == 1)
        try Data(try #require(plans.first).utf8).write(to: scratch.url.appending(path: "v1-to-v2.json"))
        let commands = try Self.blocks("sh").flatMap { $0.split(separator: "\n").map(String.init) }.filter { $0.hasPrefix("backstage ") }
        #expect(commands.count == 6, "capture, add-version, check, fixture, simulate, bench")
        var outputs: [String] = []
        for command in commands {
            let arguments = command.split(separator: " ").dropFirst().map(String.init)
            let result = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            outputs.append(result.stdout)
        }
        #expect(outputs[0].contains("documents/Cookbook.sqlite (written by the app): 5 tables, 1 indexes, 1 triggers, 1 views, 1 virtual tables"))
        #expect(outputs[2].contains("2 version(s), no problem found"))
        #expect(FileManager.default.fileExists(atPath: scratch.url.appending(path: "cookbook-v1/Documents/Cookbook.sqlite-wal").path))
        #expect(outputs[4].contains("12 runs, 12 passed, 0 failed"), "\(outputs[4])")
        #expect(outputs[5].contains("projected at 1 GB") && outputs[5].contains("v1-to-v2 #2: migrate"), "\(outputs[5])")
    }
}
