import Backstage
import Foundation

/// A folder describing one app's storage history: `catalog.json` lists the versions in order, each
/// with its stores (where they live, which tables each holds, the one the app writes to) and the
/// plan that reaches it from the version before; each store's schema and statistics are a file of
/// their own. Captured from real stores, it holds schema and statistics only, never row content.
///
/// The format is versioned (``CatalogManifest/format``) and described by `catalog.schema.json`.
///
/// ```text
/// Cookbook/
///   catalog.json
///   stores/v1/documents-Cookbook.sqlite.json
///   plans/v1-to-v2.json
/// ```
public struct CatalogManifest: Sendable, Hashable, Codable {
    /// The format this version of Backstage writes and the newest it reads.
    public static let currentFormat = 1

    /// The format version.
    public var format: Int
    /// The app's name, for people.
    public var app: String
    /// The versions, oldest first.
    public var versions: [CatalogVersion]

    public init(app: String, versions: [CatalogVersion]) {
        self.format = Self.currentFormat
        self.app = app
        self.versions = versions
    }
}

/// One shipped (or upcoming) version of the app's storage.
public struct CatalogVersion: Sendable, Hashable, Codable {
    /// The version's name, such as `v1` or `2.3`.
    public var name: String
    /// What changed, for people.
    public var summary: String?
    /// The plan that reaches this version from the one before, relative to the catalog folder
    /// (nil for the first version).
    public var plan: String?
    /// The stores this version keeps.
    public var stores: [CatalogStore]
    /// The fingerprint of the plan (and of each of its migrations) when the version was added.
    /// Every version older than the newest has shipped: its plan must never change again.
    public var frozen: PlanFingerprint?
    /// Queries whose result must hold after an upgrade to this version.
    public var checks: [DataCheck]?

    public init(
        name: String, summary: String? = nil, plan: String? = nil, stores: [CatalogStore],
        frozen: PlanFingerprint? = nil, checks: [DataCheck]? = nil
    ) {
        self.name = name
        self.summary = summary
        self.plan = plan
        self.stores = stores
        self.frozen = frozen
        self.checks = checks
    }

    /// The store the app writes to: where a killed writer leaves its `-wal` or hot journal.
    public var writableStore: CatalogStore? { stores.first { $0.writable == true } ?? stores.first }
}

/// One store of a version.
public struct CatalogStore: Sendable, Hashable, Codable {
    /// Where the store lives in the container.
    public var location: ContainerLocation
    /// The tables (and virtual tables) it holds; a virtual table's shadow tables go with it.
    public var tables: [String]
    /// True for the store the app writes to.
    public var writable: Bool?
    /// The table the app adds rows to (where a killed writer's last rows go); by default the one
    /// with the most rows.
    public var mainTable: String?
    /// The file holding its ``StoreSchema``, relative to the catalog folder.
    public var schema: String
    /// The schema a fresh install of this version creates for the store, as a `.sql` file relative
    /// to the catalog folder: an upgraded store must equal it (`add-version --expect`).
    public var freshInstall: String?

    public init(
        location: ContainerLocation, tables: [String], writable: Bool? = nil, mainTable: String? = nil, schema: String,
        freshInstall: String? = nil
    ) {
        self.location = location
        self.tables = tables
        self.writable = writable
        self.mainTable = mainTable
        self.schema = schema
        self.freshInstall = freshInstall
    }
}

/// What a shipped version's plan was when it was added: SHA-256 of the plan (as decoded, so a
/// change of whitespace is no change) and of each migration's SQL.
public struct PlanFingerprint: Sendable, Hashable, Codable {
    public var plan: String
    /// Migration identifier → SHA-256 of its SQL.
    public var migrations: [String: String]

    public init(plan: String, migrations: [String: String]) {
        self.plan = plan
        self.migrations = migrations
    }
}

/// A query whose result must hold after an upgrade: the same as before it, or a given value.
///
/// ```json
/// { "name": "no favourite left unset", "store": "applicationSupport/Cookbook.sqlite",
///   "sql": "SELECT count(*) FROM ZRECIPE WHERE ZFAVORITE IS NULL", "equals": 0 }
/// { "name": "every recipe kept", "store": "applicationSupport/Cookbook.sqlite",
///   "sql": "SELECT count(*), sum(length(ZTITLE)) FROM ZRECIPE", "unchanged": true }
/// ```
///
/// An `unchanged` check runs before the upgrade on the first store of the version upgraded from
/// where its query runs (the tables it reads may have lived elsewhere then), and after it on
/// ``store``; every row and column of the result must be the same.
public struct DataCheck: Sendable, Hashable, Codable {
    public enum Expectation: Sendable, Hashable {
        /// The result after the upgrade equals the result before it.
        case unchanged
        /// The result is one row of one value, equal to this one (0 equals 0.0).
        case equals(CheckValue)
    }

    /// A name for reports.
    public var name: String
    /// The store of this version it queries.
    public var store: ContainerLocation
    /// One `SELECT`.
    public var sql: String
    public var expect: Expectation

    public init(name: String, store: ContainerLocation, sql: String, expect: Expectation) {
        self.name = name
        self.store = store
        self.sql = sql
        self.expect = expect
    }

    private enum CodingKeys: String, CodingKey { case name, store, sql, unchanged, equals }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        store = try container.decode(ContainerLocation.self, forKey: .store)
        sql = try container.decode(String.self, forKey: .sql)
        if container.contains(.equals) {
            guard try container.decodeIfPresent(Bool.self, forKey: .unchanged) != true else {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: container.codingPath,
                        debugDescription:
                            "check \(name) says both \"unchanged\": true and \"equals\": VALUE: keep one"))
            }
            expect = .equals(try container.decode(CheckValue.self, forKey: .equals))
        } else if try container.decodeIfPresent(Bool.self, forKey: .unchanged) == true {
            expect = .unchanged
        } else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: container.codingPath,
                    debugDescription: "check \(name) says neither \"unchanged\": true nor \"equals\": VALUE"))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(store, forKey: .store)
        try container.encode(sql, forKey: .sql)
        switch expect {
        case .unchanged: try container.encode(true, forKey: .unchanged)
        case .equals(let value): try container.encode(value, forKey: .equals)
        }
    }
}

/// One SQL value, as JSON writes it.
public enum CheckValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .real(value)
        } else {
            self = .text(try container.decode(String.self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .integer(let value): try container.encode(value)
        case .real(let value): try container.encode(value)
        case .text(let value): try container.encode(value)
        }
    }

    /// Parses a command-line value: NULL, an integer, a real, or text.
    public init(parsing text: String) {
        if text.uppercased() == "NULL" {
            self = .null
        } else if let value = Int64(text) {
            self = .integer(value)
        } else if let value = Double(text) {
            self = .real(value)
        } else {
            self = .text(text)
        }
    }

    /// SQL's equality for numbers: 0 equals 0.0.
    public func matches(_ other: CheckValue) -> Bool {
        switch (self, other) {
        case (.integer(let a), .real(let b)), (.real(let b), .integer(let a)): Double(a) == b
        default: self == other
        }
    }

    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'\(value)'"
        }
    }
}

/// A store's schema as SQLite keeps it, with the statistics that drive generation and the facts
/// Core Data adds. No row content: counts, fractions and sizes only.
public struct StoreSchema: Sendable, Hashable, Codable {
    /// One entry of `sqlite_schema`.
    public struct Object: Sendable, Hashable, Codable {
        public enum Kind: String, Sendable, Hashable, Codable {
            case table, virtualTable = "virtual-table", index, view, trigger
        }
        public var kind: Kind
        public var name: String
        /// The table an index or trigger belongs to (the object itself for tables and views).
        public var table: String
        /// The `CREATE` statement, as SQLite stores it.
        public var sql: String
        /// The shadow tables SQLite keeps for a virtual table (created with it, never on their own).
        public var shadowTables: [String]?
        /// True for a table declared `WITHOUT ROWID`.
        public var withoutRowID: Bool?

        public init(
            kind: Kind, name: String, table: String, sql: String, shadowTables: [String]? = nil,
            withoutRowID: Bool? = nil
        ) {
            self.kind = kind
            self.name = name
            self.table = table
            self.sql = sql
            self.shadowTables = shadowTables
            self.withoutRowID = withoutRowID
        }
    }

    /// `wal` or `delete` (the journal mode the app uses).
    public var journalMode: String
    public var pageSize: Int
    /// Every table, virtual table, index, view and trigger, in the order SQLite created them.
    public var objects: [Object]
    /// Statistics of each ordinary table.
    public var tables: [String: TableStatistics]
    /// What Core Data adds, when the store is a Core Data store.
    public var coreData: CoreDataFacts?
    /// The header's `user_version` and `application_id` (an app may read them); nil in catalogs
    /// captured before they were recorded.
    public var userVersion: Int32?
    public var applicationID: Int32?
    /// `UTF-8`, `UTF-16le` or `UTF-16be`; nil: UTF-8.
    public var textEncoding: String?
    /// `PRAGMA auto_vacuum`: 0 none, 1 full, 2 incremental; nil: none.
    public var autoVacuum: Int?
    /// Rows that ship with the app (a lookup table, the rows its triggers rely on), declared at
    /// capture: per table, `INSERT` statements kept verbatim and put in every fixture instead of
    /// generated rows. They are the app's, never the user's: no other table's rows are kept.
    public var appRows: [String: [String]]?
    /// Rows of the captured store that broke a foreign key (SQLite enforces none unless asked, so
    /// real stores carry them), per table and foreign key: counts only, never a row's content.
    /// Fixtures then carry about the same share of dangling references; nil or empty: none.
    public var foreignKeyViolations: [ForeignKeyViolations]?
    /// Tables the catalog declares deliberately empty: fixtures leave them without rows (every
    /// other table gets rows, even one empty in the captured store).
    public var emptyTables: [String]?

    /// How many rows of `table` point, through the foreign key on `columns`, at no row of `parent`.
    public struct ForeignKeyViolations: Sendable, Hashable, Codable {
        public var table: String
        public var parent: String
        public var columns: [String]
        public var rows: Int

        public init(table: String, parent: String, columns: [String], rows: Int) {
            self.table = table
            self.parent = parent
            self.columns = columns
            self.rows = rows
        }
    }

    public init(
        journalMode: String, pageSize: Int, objects: [Object], tables: [String: TableStatistics],
        coreData: CoreDataFacts? = nil
    ) {
        self.journalMode = journalMode
        self.pageSize = pageSize
        self.objects = objects
        self.tables = tables
        self.coreData = coreData
    }

    /// The names of the tables and virtual tables, in creation order.
    public var tableNames: [String] { objects.filter { $0.kind == .table || $0.kind == .virtualTable }.map(\.name) }
}

/// How big a table is and what its values look like.
public struct TableStatistics: Sendable, Hashable, Codable {
    public var rows: Int
    /// Bytes of its pages (b-tree and overflow), as `dbstat` counts them.
    public var bytes: Int64
    /// Per column, in declaration order.
    public var columns: [ColumnStatistics]

    public init(rows: Int, bytes: Int64, columns: [ColumnStatistics]) {
        self.rows = rows
        self.bytes = bytes
        self.columns = columns
    }
}

/// What the values of one column look like, without any of them.
public struct ColumnStatistics: Sendable, Hashable, Codable {
    public var name: String
    /// The declared type, as written.
    public var declaredType: String
    /// Shares of NULL, integer, real, text and blob values (summing to 1 for a non-empty table).
    public var nullFraction: Double
    public var integerFraction: Double
    public var realFraction: Double
    public var textFraction: Double
    public var blobFraction: Double
    /// Average and largest size in bytes of the text and blob values.
    public var averageBytes: Double
    public var maxBytes: Int
    /// Distinct non-null values over non-null values (1 = all different).
    public var distinctRatio: Double
    /// Bits needed for the largest integer magnitude (a scale, not a value).
    public var integerBits: Int
    /// Share of blob values that are Core Data external-data references (the file lives in
    /// `.Name_SUPPORT/_EXTERNAL_DATA`).
    public var externalFraction: Double

    public init(
        name: String, declaredType: String, nullFraction: Double = 1, integerFraction: Double = 0,
        realFraction: Double = 0,
        textFraction: Double = 0, blobFraction: Double = 0, averageBytes: Double = 0, maxBytes: Int = 0,
        distinctRatio: Double = 1, integerBits: Int = 0, externalFraction: Double = 0
    ) {
        self.name = name
        self.declaredType = declaredType
        self.nullFraction = nullFraction
        self.integerFraction = integerFraction
        self.realFraction = realFraction
        self.textFraction = textFraction
        self.blobFraction = blobFraction
        self.averageBytes = averageBytes
        self.maxBytes = maxBytes
        self.distinctRatio = distinctRatio
        self.integerBits = integerBits
        self.externalFraction = externalFraction
    }
}

/// What Core Data keeps beside the tables: its entities (`Z_PRIMARYKEY`), the model's version
/// hashes and identifiers (`Z_METADATA`'s plist), and the external data folder.
public struct CoreDataFacts: Sendable, Hashable, Codable {
    public struct Entity: Sendable, Hashable, Codable {
        /// `Z_ENT`.
        public var id: Int
        public var name: String
        /// `Z_SUPER`: the parent entity, 0 for a root entity.
        public var superID: Int
        /// The table holding its rows: `Z<ROOT ENTITY NAME>`.
        public var table: String

        public init(id: Int, name: String, superID: Int, table: String) {
            self.id = id
            self.name = name
            self.superID = superID
            self.table = table
        }
    }

    public var entities: [Entity]
    /// `NSStoreModelVersionHashes`: entity name → base64 of its version hash.
    public var versionHashes: [String: String]
    /// `NSStoreModelVersionIdentifiers`.
    public var versionIdentifiers: [String]
    /// Files and bytes in `.Name_SUPPORT/_EXTERNAL_DATA`.
    public var externalFiles: Int
    public var externalBytes: Int64
    /// `NSPersistenceFrameworkVersion`: the Core Data release that wrote the captured store (519,
    /// 847, …); nil when not captured (a catalog made from a model does not know it).
    public var persistenceFrameworkVersion: Int?

    public init(
        entities: [Entity], versionHashes: [String: String], versionIdentifiers: [String], externalFiles: Int,
        externalBytes: Int64, persistenceFrameworkVersion: Int? = nil
    ) {
        self.entities = entities
        self.versionHashes = versionHashes
        self.versionIdentifiers = versionIdentifiers
        self.externalFiles = externalFiles
        self.externalBytes = externalBytes
        self.persistenceFrameworkVersion = persistenceFrameworkVersion
    }
}
