import BackstageModel
import BackstageSystem
import Foundation
import GRDB

extension CoreDataMigrationProgram {
    /// What the runner does when the program's version hashes are unknown.
    public enum MissingHashes: String, Sendable, Hashable, Codable {
        /// Refuse to run: the store would be refused by the app's Core Data at launch.
        case refuse
        /// Run, and leave `NSStoreModelVersionHashes` out of the metadata: for simulations and benches
        /// of the table rewrites only, never for a store an app will open.
        case omitForTesting
    }

    /// Why a program does not run; nothing was changed.
    public enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// The program holds what it could not work out (``unresolved``).
        case unresolved([Unresolved])
        /// `Z_METADATA` holds no row, or its plist is not a dictionary: not a Core Data store.
        case metadataIsNotADictionary
        /// `rows` rows of `table` have a `Z_ENT` that is none of its entities' (`entities`): a
        /// damaged store, or one of another model version. Counts only, never a value.
        case rowsOfNoEntity(table: String, rows: Int, entities: [Int])

        public var description: String {
            switch self {
            case .unresolved(let problems): problems.map(\.description).joined(separator: "; ")
            case .metadataIsNotADictionary: "Z_METADATA holds no plist dictionary"
            case .rowsOfNoEntity(let table, let rows, let entities):
                "\(table) holds \(rows) row\(rows == 1 ? "" : "s") whose Z_ENT is none of its entities' "
                    + "(\(entities.map(String.init).joined(separator: ", "))): the store is damaged or of another "
                    + "model version; nothing was changed"
            }
        }
    }

    /// Runs every statement on `db`, which must be inside a transaction the caller commits.
    ///
    /// - Parameters:
    ///   - db: The store's connection, inside a transaction.
    ///   - missingHashes: Whether a program with unknown version hashes may run (tests and benches only).
    ///   - writesMetadata: False to leave `Z_METADATA` alone (a rehearsal on an empty copy).
    ///   - afterEach: Called after each statement with how many have run.
    /// - throws: ``Refusal`` when something is unresolved (and `missingHashes` is `.refuse`), a
    ///   table holds rows of no entity, or `Z_METADATA` holds no plist; `DatabaseError` from SQLite.
    public func apply(
        to db: Database, missingHashes: MissingHashes = .refuse, metadata writesMetadata: Bool = true,
        afterEach: (Int) -> Void = { _ in }
    ) throws {
        if !unresolved.isEmpty, missingHashes == .refuse { throw Refusal.unresolved(unresolved) }
        for (index, statement) in statements.enumerated() {
            switch statement {
            case .sql(let sql): try db.execute(sql: sql)
            case .requireEntities(let table, let entities):
                guard try db.tableExists(table) else { break }
                let known = entities.map(String.init).joined(separator: ", ")
                let rows =
                    try Int.fetchOne(
                        db,
                        sql:
                            "SELECT count(*) FROM \(table.quotedDatabaseIdentifier) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(known))"
                    ) ?? 0
                if rows > 0 { throw Refusal.rowsOfNoEntity(table: table, rows: rows, entities: entities) }
            case .writeMetadata:
                guard writesMetadata else { continue }
                guard let row = try Row.fetchOne(db, sql: "SELECT Z_VERSION, Z_PLIST FROM Z_METADATA"),
                    let existing = row["Z_PLIST"] as Data?
                else { throw Refusal.metadataIsNotADictionary }
                let version: Int64 = row["Z_VERSION"]
                let rewritten = try Self.rewrittenMetadataPlist(existing, with: metadata)
                try db.execute(
                    sql: "UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = ?", arguments: [rewritten, version])
            }
            afterEach(index + 1)
        }
    }
}
