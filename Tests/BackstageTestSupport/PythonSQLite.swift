import Backstage
import Foundation

/// Real SQLite writers and readers in separate processes, through Python's `sqlite3` module:
/// an implementation independent of Backstage and GRDB, and a process that can really be killed.
public enum PythonSQLite {
    static var python: String {
        ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/python3"
    }

    /// Runs a Python script with arguments.
    @discardableResult
    public static func run(_ script: String, _ arguments: [String]) throws -> ProcessResult {
        try runProcess(python, ["-c", script] + arguments)
    }

    /// Creates a `note` table in WAL mode: `committed` rows checkpointed into the main file,
    /// then `walOnly` rows committed one transaction each, then the writer dies by SIGKILL.
    /// Afterwards the last `walOnly` rows exist only in the `-wal`.
    public static func writeThenKill(_ database: URL, committed: Int, walOnly: Int, bodyBytes: Int = 200) throws {
        let script = """
            import sqlite3, os, signal, sys
            db, committed, walonly, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
            c = sqlite3.connect(db, isolation_level=None)
            c.execute("pragma journal_mode=wal")
            c.execute("pragma wal_autocheckpoint=0")
            c.execute("create table if not exists note(id integer primary key, title text, body blob)")
            c.execute("create index if not exists note_title on note(title)")
            c.execute("begin")
            for i in range(committed):
                c.execute("insert into note(title, body) values (?, randomblob(?))", ("note %d" % i, size))
            c.execute("commit")
            c.execute("pragma wal_checkpoint(truncate)")
            for i in range(walonly):
                c.execute("insert into note(title, body) values (?, randomblob(?))", ("wal note %d" % i, size))
            os.kill(os.getpid(), signal.SIGKILL)
            """
        let result = try run(script, [database.path, "\(committed)", "\(walOnly)", "\(bodyBytes)"])
        guard result.killedBySignal == SIGKILL else { throw Failure("writer was not killed: \(result)") }
    }

    /// Creates a rollback-journal store with `committed` rows, then starts a transaction that
    /// rewrites every row with a tiny page cache (so changed pages spill into the main file)
    /// and dies by SIGKILL mid-transaction, leaving a hot journal.
    public static func writeHotJournal(_ database: URL, committed: Int) throws {
        let script = """
            import sqlite3, os, signal, sys
            db, committed = sys.argv[1], int(sys.argv[2])
            c = sqlite3.connect(db, isolation_level=None)
            c.execute("pragma journal_mode=delete")
            c.execute("create table note(id integer primary key, title text, body blob)")
            c.execute("begin")
            for i in range(committed):
                c.execute("insert into note(title, body) values (?, randomblob(1500))", ("note %d" % i,))
            c.execute("commit")
            c.execute("pragma cache_size=2")
            c.execute("begin")
            c.execute("update note set title = 'uncommitted', body = randomblob(1500)")
            c.execute("insert into note(title, body) select 'uncommitted', randomblob(1500) from note")
            os.kill(os.getpid(), signal.SIGKILL)
            """
        let result = try run(script, [database.path, "\(committed)"])
        guard result.killedBySignal == SIGKILL else { throw Failure("writer was not killed: \(result)") }
    }

    /// Creates a store in the given journal mode with `rows` rows, closed cleanly.
    public static func createStore(_ database: URL, rows: Int, journalMode: String = "wal", bodyBytes: Int = 200) throws {
        let script = """
            import sqlite3, sys
            db, rows, mode, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
            c = sqlite3.connect(db, isolation_level=None)
            c.execute("pragma journal_mode=" + mode)
            c.execute("create table note(id integer primary key, title text, body blob)")
            c.execute("begin")
            for i in range(rows):
                c.execute("insert into note(title, body) values (?, randomblob(?))", ("note %d" % i, size))
            c.execute("commit")
            c.close()
            """
        let result = try run(script, [database.path, "\(rows)", journalMode, "\(bodyBytes)"])
        guard result.status == 0 else { throw Failure("createStore failed: \(result.stderr)") }
    }

    /// Counts the rows of `table`, and reports the integrity check, on a scratch copy of the
    /// store (never in place). With `includingWAL: false` the `-wal` is left out of the copy.
    public static func inspect(_ store: StoreFileSet, table: String = "note", titleColumn: String = "title", includingWAL: Bool = true) throws -> (rows: Int, titles: Set<String>, integrity: String) {
        let scratch = try TemporaryDirectory(prefix: "inspect")
        var files = [store.main]
        if includingWAL { files.append(store.sidecar(.wal)) }
        files.append(store.sidecar(.journal))
        for file in files where FileManager.default.fileExists(atPath: file.path) {
            try FileManager.default.copyItem(at: file, to: scratch.url.appending(path: file.lastPathComponent))
        }
        let script = """
            import sqlite3, sys, json
            c = sqlite3.connect(sys.argv[1])
            rows = c.execute("select " + sys.argv[3] + " from " + sys.argv[2]).fetchall()  # fixtures hold NULL titles too
            integrity = c.execute("pragma integrity_check").fetchone()[0]
            print(json.dumps({"rows": len(rows), "titles": sorted(set(r[0] for r in rows if r[0] is not None)), "integrity": integrity}))
            """
        let result = try run(script, [scratch.url.appending(path: store.fileName).path, table, titleColumn])
        guard result.status == 0, let data = result.stdout.data(using: .utf8),
              let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw Failure("inspect \(store.main.path) failed: \(result.stderr)")
        }
        return (object["rows"] as? Int ?? -1, Set(object["titles"] as? [String] ?? []), object["integrity"] as? String ?? "")
    }

    /// Starts a process that opens the store and holds a read transaction until killed.
    public static func holdOpen(_ database: URL) throws -> Process {
        try startHolder("""
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("begin")
            c.execute("select count(*) from note").fetchall()
            print("ready", flush=True)
            time.sleep(120)
            """, [database.path])
    }

    /// Opens the store and reads it, then sits idle with no transaction: a rollback-journal
    /// connection that holds no SQLite lock at all, as an app between two writes does.
    public static func holdOpenIdle(_ database: URL) throws -> Process {
        try startHolder("""
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("select count(*) from note").fetchall()
            print("ready", flush=True)
            time.sleep(120)
            """, [database.path])
    }

    /// Runs a Python script that takes a lock, prints `ready` and keeps it; returns once it printed.
    /// Starts a process that appends a line to `file` every 2 ms, as an app writes its log, until killed.
    public static func appendEvery2ms(_ file: URL) throws -> Process {
        try startHolder("""
            import sys, time
            f = open(sys.argv[1], "a", buffering=1)
            f.write("started\\n"); print("ready", flush=True)
            i = 0
            while True:
                f.write("line %d of the app's log, written while it is exported\\n" % i); i += 1
                time.sleep(0.002)
            """, [file.path])
    }

    static func startHolder(_ script: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(filePath: python)
        process.arguments = ["-c", script] + arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let line = out.fileHandleForReading.availableDataOrWait()
        guard String(decoding: line, as: UTF8.self).contains("ready") else { throw Failure("lock holder did not start") }
        return process
    }
}

extension FileHandle {
    func availableDataOrWait() -> Data {
        var data = Data()
        while !String(decoding: data, as: UTF8.self).contains("\n") {
            let chunk = availableData
            if chunk.isEmpty { break }
            data += chunk
        }
        return data
    }
}

/// A test set-up failure.
public struct Failure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension PythonSQLite {
    /// The tables and the journal mode of a store, read by Python on a scratch copy.
    public static func schema(_ store: StoreFileSet) throws -> (tables: [String], journalMode: String) {
        let scratch = try TemporaryDirectory(prefix: "schema")
        for file in [store.main, store.sidecar(.wal)] where FileManager.default.fileExists(atPath: file.path) {
            try FileManager.default.copyItem(at: file, to: scratch.url.appending(path: file.lastPathComponent))
        }
        let result = try run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(",".join(r[0] for r in c.execute("select name from sqlite_master where type='table' order by name")))
            print(c.execute("pragma journal_mode").fetchone()[0])
            """, [scratch.url.appending(path: store.fileName).path])
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard result.status == 0, lines.count >= 2 else { throw Failure("schema of \(store.main.path): \(result.stderr)") }
        return (lines[0].split(separator: ",").map(String.init), lines[1])
    }

    /// Starts a process that takes the write lock of any store (an open `BEGIN IMMEDIATE`, nothing
    /// written) and holds it for `seconds`, then ends its transaction and exits.
    public static func holdWriteLockWithoutWriting(_ database: URL, seconds: Double) throws -> Process {
        try startHolder("""
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("begin immediate")
            print("ready", flush=True)
            time.sleep(float(sys.argv[2]))
            c.execute("rollback")
            """, [database.path, "\(seconds)"])
    }

    /// Starts a process that holds the write lock of a WAL store (an open `BEGIN IMMEDIATE`
    /// that inserts a row titled `holder`) for `seconds`, then commits and exits.
    public static func holdWriteLock(_ database: URL, seconds: Double) throws -> Process {
        try startHolder("""
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("begin immediate")
            c.execute("insert into note(title) values ('holder')")
            print("ready", flush=True)
            time.sleep(float(sys.argv[2]))
            c.execute("commit")
            """, [database.path, "\(seconds)"])
    }
}
