import Backstage
import BackstageFixtures
import Foundation
import GRDB

/// Writes the sample app's notes into a store, the way the app does: prepared statements, one
/// transaction for the bulk, Core Data's external-data files for large attachments.
///
/// Every note's content is a function of the seed and its number, so the same seed gives the same
/// rows however they are batched. The killing endings are how the fixture states are made for
/// real: the process dies by SIGKILL, with SQLite's files exactly as a crash leaves them.
public struct NotesWriter {
    /// How the writer stops.
    public enum Ending: String, Sendable, CaseIterable, Codable {
        /// Commits and closes normally.
        case close
        /// Checkpoints, commits the last notes one transaction each with checkpoints off, then dies:
        /// those notes live only in the `-wal`.
        case killBeforeCheckpoint = "kill-before-checkpoint"
        /// Commits in rollback-journal mode, then dies in the middle of a transaction that rewrote
        /// every note with a tiny page cache: a hot journal, and half-written pages in the database.
        case killMidTransaction = "kill-mid-transaction"
    }

    public var store: StoreFileSet
    public var seed: UInt64

    public init(store: StoreFileSet, seed: UInt64) {
        self.store = store
        self.seed = seed
    }

    /// Roughly how many bytes one note adds (row, thumbnail, log, share of attachments).
    public static let bytesPerNote: Int64 = 7_000

    /// Writes notes `first..<first+count`; the last `tail` of them are the ones a killing ending
    /// leaves only in the WAL. Creates the version-1 schema in a new file.
    public func write(first: Int, count: Int, tail: Int = 0, ending: Ending) throws {
        var configuration = Configuration()
        let rollbackJournal = ending == .killMidTransaction
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = \(rollbackJournal ? "DELETE" : "WAL")")
            if ending != .close { try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        }
        let queue = try DatabaseQueue(path: store.main.path, configuration: configuration)
        let tables = try queue.write { db -> Set<String> in
            if try !db.tableExists("ZNOTE") { try db.execute(sql: try FixtureCatalog.schemaV1()) }
            if try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZFOLDER") == 0 { try insertFolders(db) }
            return Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
        }
        let bulk = ending == .killBeforeCheckpoint ? max(0, count - tail) : count
        try queue.write { db in
            for n in first..<(first + bulk) { try insertNote(db, n, tables: tables) }
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT IFNULL(MAX(Z_PK), 0) FROM ZNOTE) WHERE Z_ENT = 2")
        }
        switch ending {
        case .close:
            try queue.close()
        case .killBeforeCheckpoint:
            try queue.writeWithoutTransaction { db in _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            for n in (first + bulk)..<(first + count) {
                try queue.write { db in try insertNote(db, n, tables: tables) }
            }
            kill(getpid(), SIGKILL)
        case .killMidTransaction:
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA cache_size = 2")
                do {
                    try db.execute(sql: "BEGIN IMMEDIATE")
                    try db.execute(sql: "UPDATE ZNOTE SET ZTITLE = 'uncommitted ' || Z_PK, ZBODY = ZBODY || ' (never saved)'")
                    try db.execute(sql: "INSERT INTO ZNOTE (Z_ENT, Z_OPT, ZFOLDER, ZTITLE, ZBODY) SELECT 2, 1, ZFOLDER, 'uncommitted', ZBODY FROM ZNOTE")
                } catch {
                    try? db.execute(sql: "ROLLBACK")
                    throw error
                }
                kill(getpid(), SIGKILL)
            }
        }
    }

    private static let folderNames = ["Inbox", "Trips", "Été 2026", "Recipes", "北京", "Work", "Ideas", "Books", "Reading list", "Café", "Archive", "Misc"]
    private static let words = ["note", "lisbon", "café", "meeting", "idea", "naïve", "résumé", "北京", "garden", "invoice", "draft", "plan",
                                "budget", "river", "photo", "über", "sketch", "travel", "recipe", "book"]

    private func insertFolders(_ db: Database) throws {
        let statement = try db.makeStatement(sql: "INSERT INTO ZFOLDER (Z_PK, Z_ENT, Z_OPT, ZNAME, ZCREATIONDATE) VALUES (?, 1, 1, ?, ?)")
        for (index, name) in Self.folderNames.enumerated() {
            try statement.execute(arguments: [index + 1, name, 700_000_000 + Double(index) * 3600])
        }
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 1", arguments: [Self.folderNames.count])
    }

    private func insertNote(_ db: Database, _ n: Int, tables: Set<String>) throws {
        var random = SeededRandom(seed: seed &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(n))
        let wordCount = 30 + Int(random.next() % 120)
        let body = (0..<wordCount).map { _ in Self.words[Int(random.next() % UInt64(Self.words.count))] }.joined(separator: " ")
        try db.cachedStatement(sql: "INSERT INTO ZNOTE (Z_PK, Z_ENT, Z_OPT, ZFOLDER, ZTITLE, ZBODY, ZMODIFICATIONDATE) VALUES (?, 2, 1, ?, ?, ?, ?)")
            .execute(arguments: [n, 1 + n % Self.folderNames.count, "Note \(n) — \(Self.words[n % Self.words.count])", body, 700_000_000 + Double(n) * 37])
        if tables.contains("ZTHUMBNAIL") {
            try db.cachedStatement(sql: "INSERT INTO ZTHUMBNAIL (Z_PK, Z_ENT, Z_OPT, ZNOTE, ZIMAGE) VALUES (?, 4, 1, ?, ?)")
                .execute(arguments: [n, n, Data(random.bytes(1000 + Int(random.next() % 2000)))])
        }
        if tables.contains("ZLOG") {
            try db.cachedStatement(sql: "INSERT INTO ZLOG (ZDATE, ZMESSAGE) VALUES (?, ?)").execute(arguments: [700_000_000 + Double(n) * 37, "saved note \(n)"])
        }
        if n % 8 == 0 {
            // A large attachment: a file in the support folder, referenced from the row as Core Data does.
            let name = random.uuid()
            let folder = store.supportFolder.appending(path: "_EXTERNAL_DATA")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(random.bytes(16_384 + Int(random.next() % 32_768))).write(to: folder.appending(path: name))
            try db.cachedStatement(sql: "INSERT INTO ZATTACHMENT (Z_PK, Z_ENT, Z_OPT, ZNOTE, ZFILENAME, ZDATA) VALUES (?, 3, 1, ?, ?, ?)")
                .execute(arguments: [n, n, "scan-\(n).pdf", Data([0x02] + Array(name.utf8) + [0x00])])
        } else if n % 8 == 4 {
            try db.cachedStatement(sql: "INSERT INTO ZATTACHMENT (Z_PK, Z_ENT, Z_OPT, ZNOTE, ZFILENAME, ZDATA) VALUES (?, 3, 1, ?, ?, ?)")
                .execute(arguments: [n, n, "sketch-\(n).png", Data(random.bytes(512))])
        }
    }
}
