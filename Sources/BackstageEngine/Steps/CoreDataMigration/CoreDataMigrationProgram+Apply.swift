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

        public var description: String {
            switch self {
            case .unresolved(let problems): problems.map(\.description).joined(separator: "; ")
            case .metadataIsNotADictionary: "Z_METADATA holds no plist dictionary"
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
    /// - throws: ``Refusal`` when something is unresolved (and `missingHashes` is `.refuse`) or
    ///   `Z_METADATA` holds no plist; `DatabaseError` from SQLite.
    public func apply(
        to db: Database, missingHashes: MissingHashes = .refuse, metadata writesMetadata: Bool = true,
        afterEach: (Int) -> Void = { _ in }
    ) throws {
        if !unresolved.isEmpty, missingHashes == .refuse { throw Refusal.unresolved(unresolved) }
        for (index, statement) in statements.enumerated() {
            switch statement {
            case .sql(let sql): try db.execute(sql: sql)
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

    /// False when `plist` names another model version than the source, as far as ``sourceMetadata``
    /// tells (its identifiers when it has some, its hashes when both sides have them).
    public func isSource(_ plist: Data) -> Bool {
        guard let source = sourceMetadata,
            let decoded = try? PropertyListSerialization.propertyList(from: plist, options: [], format: nil)
                as? [String: Any]
        else { return true }
        let identifiers = decoded["NSStoreModelVersionIdentifiers"] as? [String] ?? []
        if !source.versionIdentifiers.isEmpty, identifiers != source.versionIdentifiers { return false }
        if let expected = source.versionHashes, let hashes = decoded["NSStoreModelVersionHashes"] as? [String: Data] {
            return hashes == expected
        }
        return true
    }

    /// True when `plist` (a store's `Z_METADATA.Z_PLIST`) already names the destination: its version
    /// identifiers, and its version hashes (absent when the program's are unknown).
    public func isDestination(_ plist: Data) -> Bool {
        guard
            let decoded = try? PropertyListSerialization.propertyList(from: plist, options: [], format: nil)
                as? [String: Any]
        else { return false }
        let identifiers = decoded["NSStoreModelVersionIdentifiers"] as? [String] ?? []
        let hashes = decoded["NSStoreModelVersionHashes"] as? [String: Data]
        return identifiers == metadata.versionIdentifiers && hashes == metadata.versionHashes
    }
}
