import BackstageModel
import Foundation
import GRDB

extension CoreDataMigrationProgram {
    /// What a store of one model version holds, as far as telling versions apart needs: each
    /// entity's number (`Z_PRIMARYKEY`) and each entity or join table's columns.
    public struct StoreSignature: Codable, Sendable, Hashable {
        /// Entity name → its `Z_ENT`.
        public var entities: [String: Int]
        /// Table → its column names, upper-cased and sorted.
        public var tables: [String: [String]]

        public init(entities: [String: Int], tables: [String: [String]]) {
            self.entities = entities
            self.tables = tables.mapValues { $0.map { $0.uppercased() }.sorted() }
        }
    }

    /// Which version a store is of, as this program tells it.
    public enum StoreVersion: Sendable, Hashable {
        /// The source version's: the program runs.
        case source
        /// The destination's already (another run, the app's own Core Data): nothing to do.
        case destination(because: String)
        /// Neither (a later step of the chain already took it further, or the store is not one the
        /// plan expects): left alone, the reason said.
        case other(because: String)

        /// Why the program has nothing to do; nil for ``source``.
        public var reason: String? {
            switch self {
            case .source: nil
            case .destination(let because): "up to date: \(because)"
            case .other(let because): "not of \(because)"
            }
        }
    }

    /// Which version the store on `db` is of: by `Z_METADATA`'s version hashes when both the store
    /// and the program know them, else by its version identifiers when the two versions' differ,
    /// else by its schema (entity numbers and tables, ``sourceSignature`` and
    /// ``destinationSignature``). A store with no `Z_METADATA` plist counts as the source: the run
    /// then refuses it (``Refusal/metadataIsNotADictionary``).
    public func storeVersion(in db: Database) throws -> StoreVersion {
        guard try db.tableExists("Z_METADATA"),
            let plist = try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA"),
            let decoded = try? PropertyListSerialization.propertyList(from: plist, options: [], format: nil)
                as? [String: Any]
        else { return .source }
        let identifiers = decoded["NSStoreModelVersionIdentifiers"] as? [String] ?? []
        let hashes = (decoded["NSStoreModelVersionHashes"] as? [String: Data]).flatMap { $0.isEmpty ? nil : $0 }
        let versions = "\(sourceVersion) nor \(destinationVersion)"
        // Version hashes are what Core Data itself compares at launch.
        if let hashes, let destination = metadata.versionHashes {
            if hashes == destination, identifiers == metadata.versionIdentifiers {
                return .destination(because: "its metadata names \(destinationVersion)")
            }
            if let source = sourceMetadata?.versionHashes {
                let sameIdentifiers =
                    sourceMetadata?.versionIdentifiers.isEmpty != false
                    || identifiers == sourceMetadata?.versionIdentifiers
                return hashes == source && sameIdentifiers
                    ? .source : .other(because: "\(versions): its metadata names another model version")
            }
        }
        // The developer's version identifiers, when they tell the two versions apart.
        if let source = sourceMetadata, source.versionIdentifiers != metadata.versionIdentifiers {
            if identifiers == metadata.versionIdentifiers {
                return .destination(because: "its version identifiers are \(destinationVersion)'s")
            }
            if identifiers != source.versionIdentifiers {
                return .other(because: "\(versions): its version identifiers name another model version")
            }
            return .source
        }
        // The schema: entity numbers and tables.
        guard let sourceSignature, let destinationSignature else {
            // A program compiled before signatures were recorded: the metadata is all there is.
            return hashes == nil && identifiers == metadata.versionIdentifiers && metadata.versionHashes == nil
                ? .destination(because: "its metadata names \(destinationVersion)") : .source
        }
        let store = try Self.signature(of: db, comparedWith: [sourceSignature, destinationSignature])
        let isSource = sourceSignature.matches(store)
        let isDestination = destinationSignature.matches(store)
        switch (isSource, isDestination) {
        case (true, false): return .source
        case (false, true): return .destination(because: "its schema is \(destinationVersion)'s")
        case (true, true):
            return .destination(
                because: "its schema is \(destinationVersion)'s, the same as \(sourceVersion)'s, and its version "
                    + "hashes do not tell them apart")
        case (false, false): return .other(because: "\(versions): its schema is neither version's")
        }
    }

    /// The store's entity numbers, and its tables as far as `signatures` name them.
    public static func signature(of db: Database, comparedWith signatures: [StoreSignature]) throws -> StoreSignature {
        // Every entity of the model (a later version's too); Core Data's persistent history
        // entities, numbered from 16000, are not the model's.
        var entities: [String: Int] = [:]
        if try db.tableExists("Z_PRIMARYKEY") {
            for row in try Row.fetchAll(db, sql: "SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY WHERE Z_ENT < 16000") {
                guard let name = row["Z_NAME"] as String? else { continue }
                entities[name] = row["Z_ENT"]
            }
        }
        var tables: [String: [String]] = [:]
        for table in Set(signatures.flatMap(\.tables.keys)) where try db.tableExists(table) {
            tables[table] = try db.columns(in: table).map(\.name)
        }
        return StoreSignature(entities: entities, tables: tables)
    }
}

extension CoreDataMigrationProgram.StoreSignature {
    /// True when `store` (its tables read for this signature's names and others') has exactly these
    /// entities with these numbers, these tables with these columns, and none of the other tables.
    public func matches(_ store: Self) -> Bool { differences(from: store).isEmpty }

    /// How `store` differs from this signature, one phrase each (names only, never a value); empty
    /// when it ``matches(_:)``.
    public func differences(from store: Self) -> [String] {
        var found: [String] = []
        for (entity, number) in entities.sorted(by: { $0.key < $1.key }) where store.entities[entity] != number {
            found.append(
                store.entities[entity].map { "entity \(entity) is number \($0), not \(number)" }
                    ?? "entity \(entity) is not in Z_PRIMARYKEY")
        }
        for entity in Set(store.entities.keys).subtracting(entities.keys).sorted() {
            found.append("entity \(entity) should not be there")
        }
        for table in Set(tables.keys).union(store.tables.keys).sorted() {
            switch (tables[table], store.tables[table]) {
            case (nil, _?): found.append("table \(table) should not be there")
            case (_?, nil): found.append("table \(table) is missing")
            case (let expected?, let actual?) where expected != actual:
                let missing = Set(expected).subtracting(actual).sorted()
                let extra = Set(actual).subtracting(expected).sorted()
                var parts: [String] = []
                if !missing.isEmpty { parts.append("lacks \(missing.joined(separator: ", "))") }
                if !extra.isEmpty { parts.append("has \(extra.joined(separator: ", ")) too") }
                found.append("table \(table) \(parts.joined(separator: " and "))")
            default: break
            }
        }
        return found
    }
}
