import Backstage
import Foundation

/// The Ledger app, made up for these tests: an app that lets its users keep their own SQLite
/// databases as documents. It declares its store `Ledger.sqlite` and its per-account stores
/// `Accounts/*/UserData.sqlite`; beside them in Documents the user keeps `notes.db` (rollback
/// journal), `Finance/Budget.sqlite` and `Journal.sqlite`, whose last committed rows are only in
/// its `-wal` (the user's SQLite browser was killed).
public enum LedgerApp {
    /// What the app declares.
    public static let declared = ["Ledger.sqlite", "Accounts/*/UserData.sqlite"]
    /// The user's databases, with the rows each holds (committed, WAL included).
    public static let userDatabases = ["Finance/Budget.sqlite": 8, "Journal.sqlite": 40, "notes.db": 12]
    /// Every file of the user's databases in Documents.
    public static let userFiles = [
        "Finance/Budget.sqlite", "Journal.sqlite", "Journal.sqlite-shm", "Journal.sqlite-wal", "notes.db",
    ]

    /// A container of the Ledger app; with `withStores: false`, only the user's databases.
    public static func make(withStores: Bool = true) throws -> TestContainer {
        let app = try TestContainer(declaring: declared)
        try writeUserDatabases(into: app.documents)
        if withStores {
            try PythonSQLite.createStore(app.documents.appending(path: "Ledger.sqlite"), rows: 20)
            try FileManager.default.createDirectory(
                at: app.documents.appending(path: "Accounts/7"), withIntermediateDirectories: true)
            try PythonSQLite.createStore(app.documents.appending(path: "Accounts/7/UserData.sqlite"), rows: 5)
        }
        return app
    }

    /// Writes the user's databases into `documents`.
    public static func writeUserDatabases(into documents: URL) throws {
        try FileManager.default.createDirectory(
            at: documents.appending(path: "Finance"), withIntermediateDirectories: true)
        try PythonSQLite.createStore(documents.appending(path: "notes.db"), rows: 12, journalMode: "delete")
        try PythonSQLite.createStore(documents.appending(path: "Finance/Budget.sqlite"), rows: 8, journalMode: "delete")
        try PythonSQLite.writeThenKill(documents.appending(path: "Journal.sqlite"), committed: 30, walOnly: 10)
    }

    /// The bytes of the user's database files.
    public static func userBytes(in documents: URL) -> [String: Data] {
        var result: [String: Data] = [:]
        for path in userFiles {
            result[path] = FileManager.default.contents(atPath: documents.appending(path: path).path)
        }
        return result
    }
}
