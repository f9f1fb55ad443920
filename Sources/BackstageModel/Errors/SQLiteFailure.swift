import BackstageSystem
import Foundation

/// Turns a SQLite result code about a store into a sentence a user can act on, keeping the
/// code and SQLite's own words after it. "SQLite error 3850: disk I/O error" says nothing; "the
/// store's folder is read-only" says what to fix.
/// See <https://www.sqlite.org/rescode.html>.
enum SQLiteFailure {
    static func sentence(code: Int32, message: String, path: String) -> String {
        let primary = code & 0xFF
        let folder = (path as NSString).deletingLastPathComponent
        let folderWritable = access(folder.isEmpty ? "." : folder, W_OK) == 0
        let cause: String? =
            switch primary {
            // SQLITE_IOERR or SQLITE_CANTOPEN in a folder it cannot write to; SQLITE_READONLY.
            case 10 where !folderWritable, 14 where !folderWritable, 8:
                "the store's folder \(folder) is read-only (SQLite needs to create its -wal, -shm or -journal there)"
            case 10: "the disk could not be read or written"
            case 13: "the disk is full"
            case 14 where (path as NSString).lastPathComponent.utf8.count > ContainerLocation.longestStoreName:
                "its file name is \((path as NSString).lastPathComponent.utf8.count) bytes, too long for a store: "
                    + "SQLite cannot make its -journal beside it (a file name holds 255 bytes)"
            case 14: "the store cannot be opened: it is missing, or its folder is not accessible"
            case 5, 6: "another process holds the store's lock"
            case 11: "the store is damaged"
            case 26: "the file is not a SQLite database"
            case 23: "permission denied"
            default: nil
            }
        let detail = "SQLite error \(code): \(message)"
        return cause.map { "\(path): \($0) (\(detail))" } ?? "\(detail) on \(path)"
    }
}
