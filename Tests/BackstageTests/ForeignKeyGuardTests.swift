import Backstage
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// With `foreignKeyChecks: deferred` (the default), a migration fails when it adds a foreign-key
/// violation, however it adds it, and never for the violations the store already held. The guard
/// checks only the child tables a migration could have touched: every way of touching one is tried.
@Suite struct ForeignKeyGuardTests {
    /// Application Support/App.sqlite: teams and players, a roster view of them, a log the triggers
    /// fill, and one player whose team never existed (the app ran with foreign keys off).
    static func store(_ app: TestContainer) throws {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: app.supportStore("App.sqlite").main.path, configuration: configuration)
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE team (id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, name TEXT);
                    CREATE TABLE player (
                        id INTEGER PRIMARY KEY, teamId INTEGER REFERENCES team(id),
                        teamCode TEXT REFERENCES team(code), name TEXT);
                    CREATE TABLE award (playerId INTEGER NOT NULL REFERENCES player, title TEXT,
                        PRIMARY KEY (playerId, title)) WITHOUT ROWID;
                    CREATE TABLE log (line TEXT);
                    INSERT INTO team VALUES (1, 'red', 'Red'), (2, 'blue', 'Blue');
                    INSERT INTO player VALUES (1, 1, 'red', 'Ann'), (2, 2, 'blue', 'Bo'), (3, 404, NULL, 'Cy');
                    INSERT INTO award VALUES (1, 'mvp'), (2, 'rookie');
                    """)
        }
        try queue.close()
    }

    static func migrate(_ app: TestContainer, _ sql: String) async throws {
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(.support("App.sqlite"), [.init(id: "v2", sql: sql)])
        }
        try await Upgrader(container: app.container).upgrade(plan)
    }

    static func columns(_ app: TestContainer, _ table: String) throws -> [String] {
        try DatabaseQueue(path: app.supportStore("App.sqlite").main.path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
        }
    }

    static func applied(_ app: TestContainer) throws -> [String] {
        try DatabaseQueue(path: app.supportStore("App.sqlite").main.path).read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var sql: String
        var table: String
        var testDescription: String { name }
    }

    /// Each adds one violation, in `table`; each also adds a column, so "rolled back" can be seen.
    static let adding: [Case] = [
        Case(name: "insert into a child", sql: "INSERT INTO player VALUES (9, 77, NULL, 'Dee')", table: "player"),
        Case(name: "update a child's key", sql: "UPDATE player SET teamCode = 'green' WHERE id = 1", table: "player"),
        Case(name: "delete a parent", sql: "DELETE FROM team WHERE id = 2", table: "player"),
        Case(name: "update a parent's key", sql: "UPDATE team SET code = 'crimson' WHERE id = 1", table: "player"),
        Case(name: "update a parent's rowid key", sql: "UPDATE team SET id = 10 WHERE id = 1", table: "player"),
        Case(name: "drop a parent", sql: "DROP TABLE award; DROP TABLE IF EXISTS main.team", table: "player"),
        Case(
            name: "a key with no columns, to a WITHOUT ROWID child",
            sql: "DELETE FROM player WHERE id = 2", table: "award"),
        Case(
            name: "a parent's primary key, named by no column of the key",
            sql: "UPDATE player SET id = 21 WHERE id = 1", table: "award"),
        Case(
            name: "a trigger writes the child",
            sql: """
                CREATE TRIGGER log_award AFTER INSERT ON log BEGIN INSERT INTO award VALUES (55, new.line); END;
                INSERT INTO log VALUES ('x')
                """, table: "award"),
        Case(
            name: "a new column that references",
            sql: "ALTER TABLE award ADD COLUMN teamId INTEGER DEFAULT 99 REFERENCES team(id)", table: "award"),
        Case(
            name: "the twelve-step rebuild",
            sql: """
                CREATE TABLE new_player (id INTEGER PRIMARY KEY, teamId INTEGER REFERENCES team(id), name TEXT);
                INSERT INTO new_player SELECT id, teamId + 1, name FROM player;
                DROP TABLE player;
                ALTER TABLE new_player RENAME TO player
                """, table: "player"),
    ]

    @Test(arguments: adding)
    func aMigrationThatAddsAViolationFailsAndLeavesNothing(_ added: Case) async throws {
        let app = try TestContainer()
        try Self.store(app)
        let before = try Self.columns(app, "team")
        await #expect {
            try await Self.migrate(app, "ALTER TABLE team ADD COLUMN colour TEXT; " + added.sql)
        } throws: { error in
            guard let error = error as? BackstageError, case .migrationFailed("v2", let message) = error.cause else { return false }
            return message.contains("of table \(added.table) ") && !message.contains("Cy")
        }
        #expect(try Self.columns(app, "team") == before, "rolled back")
    }

    /// The store's own violation (player 3's team) never fails a migration, whether or not the
    /// migration touches its table; a change that resolves violations passes too.
    @Test(arguments: [
        "ALTER TABLE team ADD COLUMN colour TEXT; CREATE INDEX team_colour ON team(colour)",
        "UPDATE player SET name = upper(name)",
        "UPDATE player SET teamCode = 'blue' WHERE id = 2",
        "DELETE FROM award WHERE title = 'rookie'; INSERT INTO team VALUES (404, 'lost', 'Lost')",
        "UPDATE team SET name = 'Reds' WHERE id = 1",
        // Refers to rows of the store: the dry run, on an empty copy of the schema, must not refuse it.
        "INSERT INTO player VALUES (9, 1, 'red', 'Dee'); INSERT INTO award VALUES (9, 'debut')",
    ])
    func violationsTheStoreHeldNeverFailAMigration(_ sql: String) async throws {
        let app = try TestContainer()
        try Self.store(app)
        try await Self.migrate(app, sql)
        #expect(try Self.applied(app) == ["v2"])
    }
}
