import ArgumentParser
import Foundation
import GRDB

/// A real SQLite writer that is killed before it checkpoints: its last committed rows live only
/// in the `-wal`. `backstage demo` runs it in a child process to build the v1 container.
struct DemoWriter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo-writer",
        abstract: "Write a Notes store in WAL mode, then die by SIGKILL before checkpointing.",
        shouldDisplay: false
    )

    @Argument(help: "The database file to create.")
    var database: String

    @Option(help: "Rows written and checkpointed into the main file.")
    var rows = 1000

    @Option(help: "Rows committed afterwards, left only in the -wal.")
    var walRows = 250

    func run() throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        }
        let queue = try DatabaseQueue(path: database, configuration: configuration)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
                CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
                CREATE TABLE ZNOTE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR, ZBODY VARCHAR, ZCREATIONDATE TIMESTAMP);
                CREATE INDEX ZNOTE_ZCREATIONDATE_INDEX ON ZNOTE (ZCREATIONDATE);
                INSERT INTO Z_PRIMARYKEY VALUES (1, 'Note', 0, 0);
                INSERT INTO Z_METADATA VALUES (1, 'B4C1D3A2-0000-4000-8000-000000000001', NULL);
                """)
            try insert(db, from: 1, count: rows)
        }
        try queue.writeWithoutTransaction { db in
            _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        var next = rows + 1
        while next <= rows + walRows {
            let batch = min(25, rows + walRows - next + 1)
            try queue.write { db in try insert(db, from: next, count: batch) }
            next += batch
        }
        // Die like an app killed by the system: no checkpoint, no close.
        kill(getpid(), SIGKILL)
    }

    private func insert(_ db: Database, from first: Int, count: Int) throws {
        let statement = try db.makeStatement(sql: "INSERT INTO ZNOTE (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZBODY, ZCREATIONDATE) VALUES (?, 1, 1, ?, ?, ?)")
        for pk in first..<(first + count) {
            try statement.execute(arguments: [pk, "Note \(pk)", String(repeating: "Lorem ipsum dolor sit amet. ", count: 4 + pk % 16), 700_000_000 + Double(pk) * 60])
        }
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 1", arguments: [first + count - 1])
    }
}
