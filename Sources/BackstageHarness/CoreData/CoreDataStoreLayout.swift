import Foundation

/// Why the store Core Data writes for a model version cannot be given: the version, the entity and
/// property, and the cause. Nothing is guessed in their place.
public struct CoreDataSchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What Backstage cannot derive.
    public enum Reason: Sendable, Hashable {
        /// A to-many relationship without an inverse: how Core Data stores it is not known here.
        case toManyWithoutInverse
        /// An attribute type whose column no real store shows (`ObjectID`, or `Undefined` on a stored
        /// attribute).
        case unsupportedAttributeType(String)
        /// An R-tree fetch index element or a partial fetch index: a virtual table or a `WHERE` clause
        /// not derived here.
        case unsupportedFetchIndex(String)
        /// A fetch index or uniqueness constraint names a property the entity does not have.
        case unknownProperty(String)
    }

    /// The model version's name.
    public var version: String
    /// `Entity` or `Entity.property`.
    public var element: String
    /// Why.
    public var reason: Reason

    public var description: String {
        let cause =
            switch reason {
            case .toManyWithoutInverse:
                "is a to-many relationship without an inverse; the table Core Data keeps for it is not known to Backstage: give it an inverse"
            case .unsupportedAttributeType(let type):
                "is a stored attribute of type \(type), whose column Backstage does not know"
            case .unsupportedFetchIndex(let what): "has a fetch index Backstage cannot write (\(what))"
            case .unknownProperty(let name): "names \(name), which the entity does not have"
            }
        return "model version \(version): \(element) \(cause)"
    }
}

/// An entity's version hash as `Z_METADATA` records it (`NSStoreModelVersionHashes`).
public enum CoreDataVersionHash: Sendable, Hashable {
    /// The 32 bytes Core Data computes.
    case known(Data)
    /// Not computed: Backstage does not reproduce Core Data's version hash algorithm (no store of
    /// `coredata-models/` proves an implementation), so none is made up.
    case unknown
}

/// The SQLite store Core Data creates for one model version, statement by statement, as real
/// stores show it (`coredata-models/`, Apple Photos' and Notes' stores):
///
/// - entities numbered 1, 2, … depth first, each level in alphabetical order without regard to
///   case (`Z_PRIMARYKEY`'s `Z_ENT`, `Z_SUPER` the parent's number or 0);
/// - one table per root entity, `Z` + its name upper-cased, holding its sub-entities' columns too;
///   `Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER` first;
/// - then the columns by kind, each kind entity by entity (root first, in entity order), by name
///   within an entity: integers and Booleans, then to-one keys (with `Z<n>_NAME` naming the entity
///   when the destination has sub-entities), then, after every entity's, the `Z_FOK_NAME` order keys
///   of ordered to-many relationships; dates, floats and decimals together; strings; blobs. A name
///   taken by another entity of the table gets `1`, `2`, …;
/// - an index `TABLE_COLUMN_INDEX` per to-one key, `TABLE_Z_ENT_INDEX` when a table holds several
///   entities, `Z_Entity_name` per fetch index and `Z_Entity_UNIQUE_a_b` per uniqueness constraint;
/// - a join table `Z_<n>NAME` per many-to-many pair (`Z_<n>INVERSE`-style columns, `REFLEXIVE` for
///   a relationship that is its own inverse, `Z_FOK_` columns when ordered), with its index;
/// - `Z_PRIMARYKEY`, `Z_METADATA` and (since iOS 11 / macOS 10.13) `Z_MODELCACHE`.
///
/// Conventions no store of `coredata-models/` shows are listed in ``assumptions`` whenever the
/// model uses them.
public struct CoreDataStoreLayout: Sendable, Hashable {
    /// Which Core Data wrote the store.
    public struct Options: Sendable, Hashable {
        /// Core Data of iOS 11 / macOS 10.13 and later creates `Z_MODELCACHE`; earlier releases
        /// (`NSPersistenceFrameworkVersion` 519 of the `mwkirk` stores) did not.
        public var writesModelCache: Bool

        public init(writesModelCache: Bool = true) { self.writesModelCache = writesModelCache }
    }

    /// The model version it was made from.
    public var version: String
    /// Every entity with its number, parent's number and table (`Z_PRIMARYKEY`'s rows).
    public var entities: [CoreDataFacts.Entity]
    /// Tables, then indexes, then Core Data's own tables, in the order Core Data creates them.
    public var objects: [StoreSchema.Object]
    /// `NSStoreModelVersionIdentifiers`.
    public var versionIdentifiers: [String]
    /// `NSStoreModelVersionHashes`, per entity.
    public var versionHashes: [String: CoreDataVersionHash]
    /// Conventions the model makes use of that no real store here proves, one sentence each.
    public var assumptions: [String]
    /// Entity → its own stored attribute or to-one relationship → the column holding it.
    public var propertyColumns: [String: [String: String]]
    /// Each many-to-many join table → the two entities whose objects it relates.
    public var joinTables: [String: [String]]

    /// The layout of `version`'s store.
    public init(_ version: CoreDataModelVersion, options: Options = Options()) throws {
        var builder = LayoutBuilder(version: version)
        try builder.build()
        self.version = version.name
        entities = builder.numbered.map {
            CoreDataFacts.Entity(
                id: $0.id, name: $0.entity.name, superID: $0.parentID, table: builder.tableName(of: $0.entity.name))
        }
        var objects = builder.tables + builder.indexes
        objects.append(
            .init(
                kind: .table, name: "Z_PRIMARYKEY", table: "Z_PRIMARYKEY",
                sql:
                    "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)"
            ))
        objects.append(
            .init(
                kind: .table, name: "Z_METADATA", table: "Z_METADATA",
                sql: "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)"))
        if options.writesModelCache {
            objects.append(
                .init(
                    kind: .table, name: "Z_MODELCACHE", table: "Z_MODELCACHE",
                    sql: "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)"))
        }
        self.objects = objects
        versionIdentifiers = version.versionIdentifier.map { [$0] } ?? []
        versionHashes = Dictionary(uniqueKeysWithValues: version.entities.map { ($0.name, .unknown) })
        assumptions = builder.assumptions
        propertyColumns = builder.columnNames
        joinTables = Dictionary(
            builder.joins.map { ($0.table, [$0.entity, $0.inverseEntity]) }, uniquingKeysWith: { first, _ in first })
        if version.versionIdentifier == nil {
            assumptions.append(
                "the model has no userDefinedModelVersionIdentifier: NSStoreModelVersionIdentifiers is taken to be empty"
            )
        }
    }

    /// The schema in the catalog's representation: every statement, each table's declared columns
    /// (no rows: a model has none), the Core Data facts with the version hashes known.
    public func storeSchema() -> StoreSchema {
        var tables: [String: TableStatistics] = [:]
        for object in objects where object.kind == .table {
            tables[object.name] = TableStatistics(
                rows: 0, bytes: 0,
                columns: Self.columns(of: object.sql).map { ColumnStatistics(name: $0.name, declaredType: $0.type) })
        }
        var hashes: [String: String] = [:]
        for (entity, hash) in versionHashes {
            if case .known(let data) = hash { hashes[entity] = data.base64EncodedString() }
        }
        return StoreSchema(
            journalMode: "wal", pageSize: 4096, objects: objects, tables: tables,
            coreData: CoreDataFacts(
                entities: entities, versionHashes: hashes, versionIdentifiers: versionIdentifiers, externalFiles: 0,
                externalBytes: 0))
    }

    /// The columns of one of the `CREATE TABLE` statements this type writes (name, declared type).
    static func columns(of sql: String) -> [(name: String, type: String)] {
        guard let open = sql.firstIndex(of: "("), let close = sql.lastIndex(of: ")") else { return [] }
        var body = sql[sql.index(after: open)..<close]
        if let key = body.range(of: ", PRIMARY KEY (") { body = body[..<key.lowerBound] }
        return body.split(separator: ",").compactMap { part in
            let words = part.split(separator: " ")
            guard let name = words.first, name != "PRIMARY", !name.hasPrefix("(") else { return nil }
            return (
                String(name),
                words.dropFirst().joined(separator: " ").replacingOccurrences(of: " PRIMARY KEY", with: "")
            )
        }
    }
}
