import BackstageModel
import BackstageSystem
import Foundation

/// What Core Data's migration between two model versions does to a SQLite store, as plain data: the
/// SQL statements that turn a store of the source version into the store Core Data leaves for the
/// destination version, the metadata to write, and what a runner or a bench needs to know about it.
///
/// Compile one with `CoreDataMigrationCompiler` (BackstageHarness, from the app's model bundle); run
/// it as an upgrade plan's `coreDataMigration` step (``UpgradeStep/CoreDataMigration``), which holds
/// it, or with ``apply(to:missingHashes:metadata:afterEach:)`` inside one transaction.
///
/// For example:
///
/// ```swift
/// let program = try CoreDataMigrationCompiler.compile(from: model.versions[0], to: model.versions[1])
/// if let blocker = program.unresolved.first { print(blocker) }   // say it; never run blind
/// try dbQueue.inTransaction { db in try program.apply(to: db); return .commit }
/// ```
public struct CoreDataMigrationProgram: Codable, Sendable, Hashable {
    /// One step of the program, in order.
    public enum Statement: Codable, Sendable, Hashable {
        /// SQL run as it is.
        case sql(String)
        /// `Z_METADATA.Z_PLIST` rewritten: `NSStoreModelVersionIdentifiers` and
        /// `NSStoreModelVersionHashes` of the destination (``metadata``), every other key, `Z_VERSION`
        /// and `Z_UUID` kept.
        case writeMetadata
        /// Refuses the store when a row of `table` has a `Z_ENT` that is none of `entities` (the
        /// numbers of the entities the table holds): such a row would be copied under no entity, or
        /// lost. Checked before anything changes.
        case requireEntities(table: String, entities: [Int])
    }

    /// What `Z_METADATA` says after the migration.
    public struct Metadata: Codable, Sendable, Hashable {
        /// `NSStoreModelVersionIdentifiers` of the destination version.
        public var versionIdentifiers: [String]
        /// `NSStoreModelVersionHashes` of the destination version (entity → 32 bytes); nil when they
        /// are not known (``Unresolved/missingVersionHashes(entities:)`` says which).
        public var versionHashes: [String: Data]?
        /// Where the hashes come from.
        public var versionHashesSource: VersionHashSource?

        public init(
            versionIdentifiers: [String], versionHashes: [String: Data]?, versionHashesSource: VersionHashSource?
        ) {
            self.versionIdentifiers = versionIdentifiers
            self.versionHashes = versionHashes
            self.versionHashesSource = versionHashesSource
        }
    }

    /// Where the destination's version hashes were taken from, in the order they are looked for.
    public enum VersionHashSource: String, Codable, Sendable, Hashable {
        /// A compiled model's `VersionInfo.plist` (`NSManagedObjectModel_VersionHashes`).
        case compiledModel
        /// A store Core Data wrote for the destination version.
        case capturedStore
        /// Computed from the model as Core Data computes them (proven on the stores of
        /// `coredata-models/`, for the model features those stores use).
        case reproduced
    }

    /// Something the program cannot do by itself; the caller must say it before running.
    public enum Unresolved: Codable, Sendable, Hashable, CustomStringConvertible {
        /// No source gives these entities' version hashes (no compiled model, no captured store, and
        /// a model feature whose hash Backstage cannot prove). Writing made-up hashes would make the
        /// app refuse the store at launch; ``Metadata/versionHashes`` is nil.
        case missingVersionHashes(entities: [String])

        public var description: String {
            switch self {
            case .missingVersionHashes(let entities):
                "the version hashes of \(entities.joined(separator: ", ")) are not known: give the compiled model's "
                    + "VersionInfo.plist or a store of the destination version"
            }
        }
    }

    /// One table the program writes anew (the estimate's input: bytes read and written).
    public struct TableRewrite: Codable, Sendable, Hashable {
        /// The destination table.
        public var table: String
        /// The source tables its rows are read from (none for a table that starts empty).
        public var sources: [String]

        public init(table: String, sources: [String]) {
            self.table = table
            self.sources = sources
        }
    }

    /// The source model version's name.
    public var sourceVersion: String
    /// The destination model version's name.
    public var destinationVersion: String
    /// Every step, in order; run them in one transaction.
    public var statements: [Statement]
    /// The same table rewrites without Core Data's bookkeeping (`Z_PRIMARYKEY`, `Z_METADATA`,
    /// `Z_MODELCACHE`): what plain SQL would do, for a bench to compare against.
    public var plainSQLBaseline: [String]
    /// What `Z_METADATA` says afterwards.
    public var metadata: Metadata
    /// What `Z_METADATA` says of a store of the source version, where known: a store of another
    /// version (one a later step of the chain already migrated) is left alone.
    public var sourceMetadata: Metadata?
    /// Tables written anew, with the tables they read.
    public var rewrites: [TableRewrite]
    /// Source tables left as they are.
    public var keptTables: [String]
    /// Source tables dropped without a destination (entities removed).
    public var droppedTables: [String]
    /// What a store of the source version holds (its entity numbers and tables), to tell it from a
    /// store of the destination when the metadata cannot: version hashes unknown to the program or
    /// absent from the store. Nil in a program compiled before it was recorded.
    public var sourceSignature: StoreSignature?
    /// What a store of the destination version holds.
    public var destinationSignature: StoreSignature?
    /// What the caller must surface before running (empty when the program is complete).
    public var unresolved: [Unresolved]
    /// Conventions the program relies on that no real store proves, one sentence each.
    public var assumptions: [String]

    public init(
        sourceVersion: String, destinationVersion: String, statements: [Statement], plainSQLBaseline: [String],
        metadata: Metadata, rewrites: [TableRewrite], keptTables: [String], droppedTables: [String],
        unresolved: [Unresolved], assumptions: [String], sourceMetadata: Metadata? = nil,
        sourceSignature: StoreSignature? = nil, destinationSignature: StoreSignature? = nil
    ) {
        self.sourceMetadata = sourceMetadata
        self.sourceSignature = sourceSignature
        self.destinationSignature = destinationSignature
        self.sourceVersion = sourceVersion
        self.destinationVersion = destinationVersion
        self.statements = statements
        self.plainSQLBaseline = plainSQLBaseline
        self.metadata = metadata
        self.rewrites = rewrites
        self.keptTables = keptTables
        self.droppedTables = droppedTables
        self.unresolved = unresolved
        self.assumptions = assumptions
    }

    /// The SQL statements alone, in order (the metadata rewrite left out).
    public var sql: [String] {
        statements.compactMap {
            if case .sql(let sql) = $0 { return sql }
            return nil
        }
    }

    /// The source tables the program reads in full: what an estimate weighs.
    public var tablesRead: [String] { Array(Set(rewrites.flatMap(\.sources))).sorted() }

    /// `existing` (a `Z_METADATA.Z_PLIST`) with the destination's identifiers and hashes: every
    /// other key kept with its plist type, except `NSStoreModelVersionChecksumKey`, which names the
    /// source model and is not reproduced. Hashes nil (unknown) removes `NSStoreModelVersionHashes`.
    public static func rewrittenMetadataPlist(_ existing: Data, with metadata: Metadata) throws -> Data {
        var format = PropertyListSerialization.PropertyListFormat.binary
        let decoded = try PropertyListSerialization.propertyList(from: existing, options: [], format: &format)
        guard var plist = decoded as? [String: Any] else {
            throw Refusal.metadataIsNotADictionary
        }
        plist["NSStoreModelVersionIdentifiers"] = metadata.versionIdentifiers
        plist["NSStoreModelVersionHashes"] = metadata.versionHashes
        plist.removeValue(forKey: "NSStoreModelVersionChecksumKey")
        // Written by PropertyListEncoder: a statically linked Foundation's PropertyListSerialization
        // refuses every array (MetadataPlistValue). A value of no plist type is left to it to refuse.
        if let data = try MetadataPlistValue.binary(plist) { return data }
        return try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
    }
}
