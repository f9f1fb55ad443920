import Backstage
import Foundation

/// A Core Data-style store written by Python's sqlite3: Z_PRIMARYKEY, Z_METADATA, ZFOLDER, ZNOTE
/// (with an index and a trigger), ZATTACHMENT (large blobs as files in `.Name_SUPPORT/_EXTERNAL_DATA`,
/// referenced by a BLOB of 0x02 + UUID as Core Data does), ZTHUMBNAIL and ZLOG. The last notes are
/// committed only in the `-wal` by a writer killed with SIGKILL.
public enum CoreDataStore {
    public static let userTables = ["ZFOLDER", "ZNOTE", "ZATTACHMENT"]
    public static let cacheTables = ["ZTHUMBNAIL"]
    public static let metadataTables = ["Z_METADATA", "Z_PRIMARYKEY"]

    /// Creates the store at `url` with `notes` notes; returns the names of the external files
    /// referenced by rows and of one file no row references.
    @discardableResult
    public static func create(_ url: URL, notes: Int, walOnlyNotes: Int = 5) throws -> (referenced: [String], unreferenced: String) {
        let support = StoreFileSet(main: url).supportFolder.appending(path: "_EXTERNAL_DATA")
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        let script = """
            import sqlite3, os, signal, sys, uuid, random
            db, notes, walonly, support = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
            random.seed(7)
            c = sqlite3.connect(db, isolation_level=None)
            c.execute("pragma journal_mode=wal")
            c.execute("pragma wal_autocheckpoint=0")
            c.executescript('''
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            CREATE TABLE ZFOLDER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            CREATE TABLE ZNOTE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFOLDER INTEGER, ZTITLE VARCHAR, ZBODY VARCHAR, ZMODIFIED TIMESTAMP);
            CREATE INDEX ZNOTE_ZFOLDER_INDEX ON ZNOTE (ZFOLDER);
            CREATE TRIGGER ZNOTE_TOUCH AFTER UPDATE OF ZTITLE ON ZNOTE BEGIN UPDATE ZNOTE SET Z_OPT = Z_OPT + 1 WHERE Z_PK = NEW.Z_PK; END;
            CREATE TABLE ZATTACHMENT (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNOTE INTEGER, ZDATA BLOB);
            CREATE TABLE ZTHUMBNAIL (Z_PK INTEGER PRIMARY KEY, ZNOTE INTEGER, ZIMAGE BLOB);
            CREATE TABLE ZLOG (Z_PK INTEGER PRIMARY KEY, ZMESSAGE VARCHAR);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Folder', 0, 3), (2, 'Note', 0, 0), (3, 'Attachment', 0, 0);
            INSERT INTO Z_METADATA VALUES (1, 'D1C2B3A4-0000-4000-8000-000000000001', x'62706c6973743030');
            INSERT INTO ZFOLDER VALUES (1, 1, 1, 'Inbox'), (2, 1, 1, 'Trips'), (3, 1, 1, 'Été');
            ''')
            referenced = []
            def note(i):
                c.execute("insert into ZNOTE values (?, 2, 1, ?, ?, ?, ?)", (i, 1 + i % 3, "Note %d" % i, "body " * (i % 50), 700000000.0 + i))
                c.execute("insert into ZTHUMBNAIL values (?, ?, randomblob(200))", (i, i))
                c.execute("insert into ZLOG values (?, ?)", (i, "saved note %d" % i))
                if i % 10 == 0:
                    name = str(uuid.UUID(int=random.getrandbits(128)))
                    open(os.path.join(support, name), "wb").write(os.urandom(20000))
                    c.execute("insert into ZATTACHMENT values (?, 3, 1, ?, ?)", (i, i, b"\\x02" + name.encode() + b"\\x00"))
                    referenced.append(name)
                elif i % 10 == 5:
                    c.execute("insert into ZATTACHMENT values (?, 3, 1, ?, randomblob(300))", (i, i))
            c.execute("begin")
            for i in range(1, notes + 1): note(i)
            c.execute("commit")
            c.execute("pragma wal_checkpoint(truncate)")
            stray = str(uuid.UUID(int=random.getrandbits(128)))
            open(os.path.join(support, stray), "wb").write(b"no row points here")
            print(stray)
            print(",".join(referenced), flush=True)
            for i in range(notes + 1, notes + walonly + 1):
                c.execute("begin"); note(i); c.execute("commit")
            sys.stdout.write(",".join(referenced[-1:]) + "\\n"); sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
            """
        let result = try PythonSQLite.run(script, [url.path, "\(notes)", "\(walOnlyNotes)", support.path])
        guard result.killedBySignal == SIGKILL else { throw Failure("Core Data writer: \(result.stderr)") }
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var referenced = lines.count > 1 ? lines[1].split(separator: ",").map(String.init) : []
        if lines.count > 2, !lines[2].isEmpty, !referenced.contains(lines[2]) { referenced.append(lines[2]) }
        // Names of files written for WAL-only notes are not printed individually: read the folder.
        let all = try FileManager.default.contentsOfDirectory(atPath: support.path)
        return (all.filter { $0 != lines[0] }.sorted(), lines[0])
    }
}

extension PythonSQLite {
    /// A SHA-256 of every row of every table (ordered by rowid), and the names of the indexes and
    /// triggers, read by Python on a scratch copy of the store.
    public static func contentHashes(_ store: StoreFileSet) throws -> (tables: [String: String], indexes: Set<String>, triggers: Set<String>) {
        let scratch = try TemporaryDirectory(prefix: "hash")
        for file in [store.main, store.sidecar(.wal)] where FileManager.default.fileExists(atPath: file.path) {
            try FileManager.default.copyItem(at: file, to: scratch.url.appending(path: file.lastPathComponent))
        }
        let result = try run("""
            import sqlite3, sys, hashlib, json
            c = sqlite3.connect(sys.argv[1])
            out = {"tables": {}, "indexes": [], "triggers": []}
            for (name,) in c.execute("select name from sqlite_master where type='table' and name not like 'sqlite_%' and name != 'grdb_migrations'").fetchall():
                h = hashlib.sha256()
                for row in c.execute('select * from "%s" order by rowid' % name):
                    h.update(repr(row).encode())
                out["tables"][name] = h.hexdigest()
            out["indexes"] = [r[0] for r in c.execute("select name from sqlite_master where type='index' and sql is not null")]
            out["triggers"] = [r[0] for r in c.execute("select name from sqlite_master where type='trigger'")]
            print(json.dumps(out))
            """, [scratch.url.appending(path: store.fileName).path])
        guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw Failure("hashes of \(store.main.path): \(result.stderr)")
        }
        return (object["tables"] as? [String: String] ?? [:], Set(object["indexes"] as? [String] ?? []), Set(object["triggers"] as? [String] ?? []))
    }
}
