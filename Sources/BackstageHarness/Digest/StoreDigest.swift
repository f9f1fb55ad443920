import Backstage
import Foundation
import GRDB

/// Row count and content hash of one table.
public struct TableDigest: Sendable, Hashable, Codable {
    public var rows: Int
    /// SHA-256 over every row (ordered by rowid), each value tagged with its type.
    public var sha256: String
}

/// Row counts and content hashes of a store's tables, read from a scratch copy (the original
/// is never opened: that would checkpoint its WAL or roll back its journal).
public enum StoreDigest {
    /// The digest of each table of the store; with `columns`, only those columns of a table are
    /// hashed (to compare a table before and after a migration that added columns).
    public static func tables(of store: StoreFileSet, columns: [String: [String]] = [:]) throws -> [String: TableDigest]
    {
        try StoreInspector.withCopy(of: store) { db in
            var result: [String: TableDigest] = [:]
            let tables = try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations' ORDER BY name"
            )
            for table in tables {
                let list = columns[table]?.map(\.quotedSQLIdentifier).joined(separator: ", ") ?? "*"
                var hasher = SHA256()
                var rows = 0
                let cursor = try Row.fetchCursor(
                    db, sql: "SELECT \(list) FROM \(table.quotedSQLIdentifier) ORDER BY \(try order(of: table, in: db))"
                )
                // One buffer for every row: the same bytes hashed as value by value, without an
                // array made for each value (most of a digest's time, before).
                var buffer: [UInt8] = []
                buffer.reserveCapacity(512)
                while let row = try cursor.next() {
                    rows += 1
                    buffer.removeAll(keepingCapacity: true)
                    for value in row.databaseValues { encode(value, into: &buffer) }
                    buffer.append(0x1e)
                    hasher.update(buffer)
                }
                result[table] = TableDigest(rows: rows, sha256: hasher.finalize())
            }
            return result
        }
    }

    /// `rowid`, or the primary key's columns for a WITHOUT ROWID table.
    private static func order(of table: String, in db: Database) throws -> String {
        let withoutRowID =
            try Bool.fetchOne(
                db, sql: "SELECT wr FROM pragma_table_list WHERE name = ? AND schema = 'main'", arguments: [table])
            ?? false
        guard withoutRowID else { return "rowid" }
        return try String.fetchAll(
            db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", arguments: [table]
        )
        .map(\.quotedSQLIdentifier).joined(separator: ", ")
    }

    /// Appends `value` to `bytes`: its type's tag, then its bytes (big-endian numbers; a text's or
    /// blob's length first).
    private static func encode(_ value: DatabaseValue, into bytes: inout [UInt8]) {
        func append<T: FixedWidthInteger>(_ number: T) {
            withUnsafeBytes(of: number.bigEndian) { bytes.append(contentsOf: $0) }
        }
        switch value.storage {
        case .null: bytes.append(0)
        case .int64(let int):
            bytes.append(1)
            append(int)
        case .double(let double):
            bytes.append(2)
            append(double.bitPattern)
        case .string(let string):
            bytes.append(3)
            append(UInt32(truncatingIfNeeded: string.utf8.count))
            bytes.append(contentsOf: string.utf8)
        case .blob(let data):
            bytes.append(4)
            append(UInt32(truncatingIfNeeded: data.count))
            bytes.append(contentsOf: data)
        }
    }
}
