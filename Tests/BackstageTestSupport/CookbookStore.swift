import Foundation

/// The second app of the tests and of the DocC article *Bringing your own app*: a recipe app's
/// GRDB store, written by Python's sqlite3 the way the app writes it.
public enum CookbookStore {
    /// Cookbook v1's store as the app writes it: foreign keys, CHECKs, WITHOUT ROWID, FTS5, a trigger, a view.
    public static func make(at url: URL) throws {
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
}
