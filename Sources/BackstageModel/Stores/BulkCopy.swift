import BackstageSystem
import CBackstageSQLite
import Foundation
import GRDB
import GRDBSQLite

/// The URIs bulk work opens its files by, through SQLite's bulk VFS (`Sources/CBackstageSQLite`):
/// a store locked against every writer is read 124 KiB at a time, and the pages of a split's
/// temporary target are written 124 KiB at a time, where
/// SQLite alone makes a system call for each page (a split of a 600 MB store: 150,000 `pread`s and
/// as many `pwrite`s, which cost more than the copy itself).
package enum BulkCopy {
    /// The VFS's name, registered on first use over the default VFS; nil when it could not be.
    package static let vfs: String? = backstage_bulk_vfs().map { String(cString: $0) }

    /// The URI of the store at `path`, read-only and without locks (`immutable=1`), read ahead.
    /// Sound only while the caller holds the store's exclusive lock: nothing can change it then.
    package static func sourceURI(_ path: String) -> String {
        StoreFileSet.immutableURI(path) + "&mode=ro" + (vfs.map { "&vfs=" + $0 } ?? "")
    }

    /// The URI of a temporary target at `path`, its writes gathered. Only for a file no other
    /// connection opens while it is written; ``flush(_:schema:)`` before it is closed.
    package static func targetURI(_ path: String) -> String {
        guard let vfs else { return path }
        return StoreFileSet.uri(path) + "?vfs=" + vfs + "&backstage_combine_writes=1"
    }

    /// The URI of a store a migration changes in place. Its main file and `-wal` go through the VFS
    /// untouched (every read and write a system call, as SQLite alone makes them: other connections
    /// read them, and a `-wal`'s frames are announced without a call the VFS sees); only the
    /// connection's own temporary files are gathered, 124 KiB a write: its statement journal (a copy
    /// of each page before the statement or savepoint changed it, read back only to roll one back)
    /// and its sorts' spill files. No other connection opens them, a crash deletes them, and no
    /// commit depends on them; a write-out that fails fails every later call on the file, so a
    /// rollback never reads pages that did not reach it.
    package static func migrationURI(_ path: String) -> String {
        guard let vfs else { return path }
        return StoreFileSet.uri(path) + "?vfs=" + vfs
    }

    /// Writes out the pages the target attached as `schema` still holds, and has it write through
    /// from then on. SQLite ignores what a close returns: a write that fails is reported here, and
    /// so is one that failed earlier in a call whose result SQLite ignored (the VFS keeps it).
    ///
    /// - throws: The failed write's `DatabaseError` (a full disk: `SQLITE_FULL`).
    package static func flush(_ db: Database, schema: String) throws {
        guard vfs != nil else { return }
        let code = sqlite3_file_control(db.sqliteConnection, schema, backstage_bulk_flush_opcode(), nil)
        // SQLITE_NOTFOUND: the file is not the VFS's (it could not be registered): nothing held.
        guard code == SQLITE_OK || code == SQLITE_NOTFOUND else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: "the pages it held could not be written out")
        }
    }
}
