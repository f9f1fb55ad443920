import Foundation

extension PythonSQLite {
    /// Opens the store, reads `table` and sits idle, the connection kept open with no transaction:
    /// in WAL mode an app between two reads, whose `-shm` lock a store lock cannot take.
    public static func holdOpenReading(_ database: URL, table: String) throws -> Process {
        try startHolder("""
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("select count(*) from " + sys.argv[2]).fetchall()
            print("ready", flush=True)
            time.sleep(120)
            """, [database.path, table])
    }
}
