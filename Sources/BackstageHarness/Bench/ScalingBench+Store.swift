import Foundation

extension ScalingBench {
    /// One large store of two plain tables (rows of incompressible blobs: 2 KB inline, 6 KB on
    /// overflow pages), made by the `sqlite3` shell with a recursive CTE and kept in the
    /// workspace, through relocate by rename and by copy, split and a schema migration.
    func measureStore(bytes: Int64) throws -> (rows: [ScalingReport.StoreRow], notes: [String]) {
        let folder = workspace.appending(path: "store-\(bytes)", directoryHint: .isDirectory)
        let source = folder.appending(path: "Big.sqlite")
        let marker = folder.appending(path: "Big.sqlite.complete")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: marker.path) {
            log("writing a store of \(BenchReport.size(bytes))")
            try? FileManager.default.removeItem(at: source)
            let rows = max(1, bytes / 8_300)
            let made = try ChildProcess.run(
                URL(filePath: "/usr/bin/sqlite3"),
                [
                    source.path,
                    """
                    PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
                    CREATE TABLE item(id INTEGER PRIMARY KEY, title TEXT, body BLOB);
                    CREATE TABLE attachment(id INTEGER PRIMARY KEY, item INTEGER, data BLOB);
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                      INSERT INTO item SELECT i, 'item ' || i, randomblob(2000) FROM n;
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                      INSERT INTO attachment SELECT i, i, randomblob(6000) FROM n;
                    """,
                ])
            guard made.status == 0 else { throw BenchError(message: "writing \(source.path) failed: \(made.stderr)") }
            try Data().write(to: marker)
        }
        let size = (try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int64) ?? bytes
        let run = folder.appending(path: "run", directoryHint: .isDirectory)
        var rows: [ScalingReport.StoreRow] = []
        var notes: [String] = []
        func time(_ operation: String, _ arguments: [String], environment: [String: String]? = nil) throws {
            log("\(operation) · store of \(BenchReport.size(size))")
            let measured = try measure(arguments, environment: environment, what: "\(operation) of the store")
            rows.append(
                ScalingReport.StoreRow(
                    operation: operation, bytes: size, seconds: measured.seconds, peakBytes: measured.peakBytes))
        }
        /// A fresh iOS container whose Documents holds the store: a hard link (nothing is copied)
        /// for the operations that never write it, a copy for those that do.
        func container(copying: Bool = false) throws -> URL {
            try remove(run)
            let documents = run.appending(path: "c/Documents", directoryHint: .isDirectory)
            try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
            if copying {
                try BenchRunner.copy(source, to: documents.appending(path: "Big.sqlite"))
            } else {
                try FileManager.default.linkItem(at: source, to: documents.appending(path: "Big.sqlite"))
            }
            return run.appending(path: "c")
        }
        defer { try? remove(run) }

        var c = try container()
        try time("relocate · rename", ["relocate", c.path, "--store", "Big.sqlite", "--strategy", "rename"])
        let shm = crossDevice.appending(path: "backstage-scale-\(getpid())", directoryHint: .isDirectory)
        if Self.availableMemory() > size + size / 2 + (1 << 30) {
            let home = run.appending(path: "home", directoryHint: .isDirectory)
            try remove(run)
            try FileManager.default.createDirectory(
                at: home.appending(path: "docs/Big"), withIntermediateDirectories: true)
            try FileManager.default.linkItem(at: source, to: home.appending(path: "docs/Big/Big.sqlite"))
            defer { try? remove(shm) }
            try time(
                "relocate · copy → /dev/shm",
                ["relocate", "--layout", "xdg", "--app", "Big", "--store", "Big.sqlite", "--strategy", "copy"],
                environment: [
                    "HOME": home.path, "XDG_DOCUMENTS_DIR": home.appending(path: "docs").path,
                    "XDG_DATA_HOME": shm.appending(path: "data").path,
                    "XDG_CACHE_HOME": home.appending(path: "cache").path, "PATH": "/usr/bin:/bin",
                ])
        } else {
            c = try container()
            notes.append(
                "too little free RAM for a copy to /dev/shm: the store was copied to a folder of the same disk")
            try time(
                "relocate · copy (same disk)", ["relocate", c.path, "--store", "Big.sqlite", "--strategy", "copy"])
        }
        c = try container(copying: true)
        let split = run.appending(path: "split.json")
        try Data(Self.splitPlan.utf8).write(to: split)
        try time("split", ["upgrade", c.path, "--plan", split.path])
        c = try container(copying: true)
        let migrate = run.appending(path: "migrate.json")
        try Data(Self.migratePlan.utf8).write(to: migrate)
        try time("migrate", ["upgrade", c.path, "--plan", migrate.path])
        return (rows, notes)
    }

    static let splitPlan = """
        {"name": "split", "steps": [{"split": {"store": "documents/Big.sqlite",
          "into": [{"store": "applicationSupport/Items.sqlite", "tables": ["item"]},
                   {"store": "caches/Attachments.sqlite", "tables": ["attachment"]}]}}]}
        """

    static let migratePlan = """
        {"name": "migrate", "steps": [{"migrateSchema": {"store": "documents/Big.sqlite", "migrations": [
          {"id": "flag", "sql": "ALTER TABLE item ADD COLUMN flag INTEGER NOT NULL DEFAULT 0"},
          {"id": "by-title", "sql": "CREATE INDEX item_title ON item(title)"}]}}]}
        """

    /// MemAvailable of /proc/meminfo in bytes, 0 when unknown.
    static func availableMemory() -> Int64 {
        let text = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("MemAvailable:") {
            let number = line.split(separator: " ").dropFirst().first.flatMap { Int64($0) } ?? 0
            return number * 1024
        }
        return 0
    }
}
