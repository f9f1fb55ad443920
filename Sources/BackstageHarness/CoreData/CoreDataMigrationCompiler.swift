import Backstage
import Foundation

/// Compiles what Core Data's migration does between two model versions into a
/// `CoreDataMigrationProgram` (Backstage): the inferred (lightweight) migration, or a mapping model's entity
/// mappings with their value expressions.
///
/// Rows keep their `Z_PK` and `Z_OPT`; `Z_ENT` is renumbered; a table is rebuilt (renamed aside,
/// created with the destination's exact statement, filled by `INSERT … SELECT`, the old one dropped)
/// only where anything about its rows changes; indexes follow; `Z_PRIMARYKEY` gets the destination's
/// entities with each entity's `Z_MAX` kept; `Z_MODELCACHE` is emptied (it holds the source model,
/// which Core Data no longer matches; Backstage cannot write the destination's); `Z_METADATA` gets
/// the destination's identifiers and version hashes.
///
/// For example:
///
/// ```swift
/// let mapping = try CoreDataMappingModel.read(bundle.appending(path: "Migration2to3.xcmappingmodel"))
/// do {
///     _ = try CoreDataMigrationCompiler.compile(from: v2, to: v3, mappingModel: mapping)
/// } catch let error as CoreDataMigrationError {
///     // .needsDeveloperSQL: entity Post runs CoreDataMigration_Example.Post2ToPost3MigrationPolicy
/// }
/// let program = try CoreDataMigrationCompiler.compile(
///     from: v2, to: v3, mappingModel: mapping,
///     customSQL: [.init(destinationEntity: "Post", statements: ["INSERT INTO ZPOST … FROM {{source:ZPOST}}"])])
/// ```
public enum CoreDataMigrationCompiler {
    /// The developer's SQL for one entity mapping Backstage cannot follow (a custom migration
    /// policy): it runs instead of the generated copy of that entity's rows, after every destination
    /// table exists and before the source tables are dropped.
    ///
    /// Placeholders: `{{source:TABLE}}` is the source store's table `TABLE` as it is while the
    /// program runs; `{{entity:Name}}` is the destination's entity number of `Name`.
    public struct CustomSQL: Sendable, Hashable {
        public var destinationEntity: String
        public var statements: [String]

        public init(destinationEntity: String, statements: [String]) {
            self.destinationEntity = destinationEntity
            self.statements = statements
        }
    }

    /// Where the destination's version hashes may come from, besides the model.
    public struct Options: Sendable, Hashable {
        /// The store was written by a Core Data that keeps `Z_MODELCACHE` (iOS 11 / macOS 10.13 on).
        public var writesModelCache: Bool
        /// The destination version's hashes from a compiled model's `VersionInfo.plist`.
        public var compiledModelHashes: [String: Data]?
        /// The destination version's hashes from a store Core Data wrote for it.
        public var capturedStoreHashes: [String: Data]?
        /// The source version's hashes (a compiled model's or a captured store's), to tell its stores.
        public var sourceHashes: [String: Data]?
        /// The store of one configuration: the tables it holds in the source version and in the
        /// destination (its entities' tables and join tables); nil for a store of every entity.
        public var configurationTables: (source: Set<String>, destination: Set<String>)? {
            get { configurationSourceTables.map { ($0, configurationDestinationTables ?? []) } }
            set {
                configurationSourceTables = newValue?.source
                configurationDestinationTables = newValue?.destination
            }
        }
        var configurationSourceTables: Set<String>?
        var configurationDestinationTables: Set<String>?

        public init(
            writesModelCache: Bool = true, compiledModelHashes: [String: Data]? = nil,
            capturedStoreHashes: [String: Data]? = nil
        ) {
            self.writesModelCache = writesModelCache
            self.compiledModelHashes = compiledModelHashes
            self.capturedStoreHashes = capturedStoreHashes
        }
    }

    /// Where one destination property's values come from.
    enum ValueSource: Hashable {
        case property(String)
        case literal(String)
        case none
    }

    /// Where one destination entity's rows come from.
    struct EntityPlan {
        var destination: String
        var source: String?
        /// Destination attribute → its values.
        var attributes: [String: ValueSource] = [:]
        /// Destination relationship → the source relationship it comes from.
        var relationships: [String: String] = [:]
        /// The developer's SQL makes its rows.
        var isCustom = false
    }

    /// The program of Core Data's inferred migration from `source` to `destination`.
    ///
    /// - throws: ``CoreDataMigrationError`` (`.notInferable` with every problem, `.schema`,
    ///   `.unsupportedRelationship`, `.mergesTables`).
    public static func compile(
        from source: CoreDataModelVersion, to destination: CoreDataModelVersion, options: Options = Options()
    ) throws -> CoreDataMigrationProgram {
        try compile(
            source, destination, plans: inferredPlans(from: source, to: destination), customSQL: [], options: options)
    }

    /// Where each destination entity's rows and values come from in the inferred migration.
    static func inferredPlans(
        from source: CoreDataModelVersion, to destination: CoreDataModelVersion
    ) throws -> [EntityPlan] {
        let mapping: CoreDataMigrationMapping
        switch InferredMigration.infer(from: source, to: destination) {
        case .success(let inferred): mapping = inferred
        case .failure(let failure): throw CoreDataMigrationError(reason: .notInferable(failure))
        }
        let plans = mapping.entities.map { entity in
            EntityPlan(
                destination: entity.destination, source: entity.source,
                attributes: Dictionary(
                    entity.attributes.map { ($0.destination, $0.source.map(ValueSource.property) ?? .none) },
                    uniquingKeysWith: { a, _ in a }),
                relationships: Dictionary(
                    entity.relationships.compactMap { r in r.source.map { (r.destination, $0) } },
                    uniquingKeysWith: { a, _ in a }))
        }
        return plans
    }

    /// The program of `mappingModel`'s migration from `source` to `destination`: its value
    /// expressions followed where they are `$source` key paths or constants; a property mapping
    /// without an expression takes the source property of its name.
    ///
    /// - throws: ``CoreDataMigrationError/Reason/needsDeveloperSQL(_:)`` naming every entity mapping
    ///   with a custom migration policy that `customSQL` does not cover, and the other reasons of
    ///   ``compile(from:to:options:)``.
    public static func compile(
        from source: CoreDataModelVersion, to destination: CoreDataModelVersion, mappingModel: CoreDataMappingModel,
        customSQL: [CustomSQL] = [], options: Options = Options()
    ) throws -> CoreDataMigrationProgram {
        let plans = try mappedPlans(from: source, to: destination, mappingModel: mappingModel, customSQL: customSQL)
        return try compile(source, destination, plans: plans, customSQL: customSQL, options: options)
    }

    /// Where each destination entity's rows and values come from under `mappingModel`.
    static func mappedPlans(
        from source: CoreDataModelVersion, to destination: CoreDataModelVersion, mappingModel: CoreDataMappingModel,
        customSQL: [CustomSQL]
    ) throws -> [EntityPlan] {
        let custom = Set(customSQL.map(\.destinationEntity))
        var needing: [CoreDataMigrationError.CustomPolicy] = []
        var plans: [EntityPlan] = []
        for entity in destination.entities {
            let mapping = mappingModel.entityMappings.first { $0.destinationEntity == entity.name }
            if let name = mapping?.sourceEntity, source.entity(named: name) == nil {
                throw CoreDataMigrationError(reason: .mappingModelDoesNotFit(entity: name))
            }
            var plan = EntityPlan(destination: entity.name, source: mapping?.sourceEntity)
            plan.isCustom = custom.contains(entity.name)
            if let policy = mapping?.migrationPolicyClassName, !plan.isCustom {
                needing.append(.init(destinationEntity: entity.name, sourceEntity: plan.source, policyClass: policy))
            }
            let sourceProperties =
                plan.source.flatMap(source.entity(named:)).map { InferredMigration.properties(of: $0, in: source) }
                ?? [:]
            for (name, property) in InferredMigration.properties(of: entity, in: destination) {
                let expression = mapping?.valueExpressions[name]
                switch (property, expression) {
                case (_, nil):
                    switch (property, sourceProperties[name]) {
                    case (.attribute, .attribute?): plan.attributes[name] = .property(name)
                    case (.relationship, .relationship?): plan.relationships[name] = name
                    case (.attribute, _): plan.attributes[name] = ValueSource.none
                    case (.relationship, _): break
                    }
                case (.attribute, .sourceKeyPath(let path)?) where !path.contains("."):
                    plan.attributes[name] = .property(path)
                case (.attribute, .constant(let constant)?):
                    plan.attributes[name] = .literal(literal(constant))
                case (.relationship, .sourceKeyPath(let path)?) where !path.contains("."),
                    (.relationship, .migratedRelationship(_, let path)?) where !path.contains("."):
                    plan.relationships[name] = path
                case (_, let expression?):
                    if !plan.isCustom {
                        throw CoreDataMigrationError(
                            reason: .unsupportedValueExpression(
                                entity: entity.name, property: name, expression: expression.description))
                    }
                }
            }
            plans.append(plan)
        }
        if !needing.isEmpty { throw CoreDataMigrationError(reason: .needsDeveloperSQL(needing)) }
        return plans
    }

    static func literal(_ constant: CoreDataValueExpression.Constant) -> String {
        switch constant {
        case .null: "NULL"
        case .integer(let value): "\(value)"
        case .real(let value): "\(value)"
        case .text(let value): quoted(value)
        }
    }

    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    private static func compile(
        _ source: CoreDataModelVersion, _ destination: CoreDataModelVersion, plans: [EntityPlan],
        customSQL: [CustomSQL], options: Options
    ) throws -> CoreDataMigrationProgram {
        let sourceSide = try MigrationSide(source, tables: options.configurationSourceTables)
        let destinationSide = try MigrationSide(destination, tables: options.configurationDestinationTables)
        var writer = try ProgramWriter(
            source: sourceSide, destination: destinationSide, plans: plans, customSQL: customSQL)
        try writer.write()
        let (hashes, hashSource, missing) = versionHashes(of: destination, options: options)
        let sourceHashes = versionHashes(
            of: source, options: Options(compiledModelHashes: options.sourceHashes)
        ).0
        var statements = writer.entityChecks.map {
            CoreDataMigrationProgram.Statement.requireEntities(table: $0.table, entities: $0.entities)
        }
        statements += writer.tableStatements.map(CoreDataMigrationProgram.Statement.sql)
        statements += writer.bookkeeping(writesModelCache: options.writesModelCache).map { .sql($0) }
        statements.append(.writeMetadata)
        return CoreDataMigrationProgram(
            sourceVersion: source.name, destinationVersion: destination.name, statements: statements,
            plainSQLBaseline: writer.tableStatements,
            metadata: .init(
                versionIdentifiers: destination.versionIdentifier.map { [$0] } ?? [], versionHashes: hashes,
                versionHashesSource: hashSource),
            rewrites: writer.rewrites, keptTables: writer.kept.sorted(), droppedTables: writer.dropped.sorted(),
            unresolved: missing.isEmpty ? [] : [.missingVersionHashes(entities: missing)],
            assumptions: writer.assumptions,
            sourceMetadata: .init(
                versionIdentifiers: source.versionIdentifier.map { [$0] } ?? [], versionHashes: sourceHashes,
                versionHashesSource: nil),
            sourceSignature: sourceSide.signature, destinationSignature: destinationSide.signature)
    }

    /// The destination's hashes: a compiled model's, a captured store's, else reproduced; the
    /// entities no source covers.
    private static func versionHashes(
        of version: CoreDataModelVersion, options: Options
    ) -> ([String: Data]?, CoreDataMigrationProgram.VersionHashSource?, [String]) {
        let names = Set(version.entities.map(\.name))
        if let hashes = options.compiledModelHashes, Set(hashes.keys) == names { return (hashes, .compiledModel, []) }
        if let hashes = options.capturedStoreHashes, Set(hashes.keys) == names { return (hashes, .capturedStore, []) }
        switch CoreDataVersionHasher.hashes(of: version) {
        case .success(let hashes): return (hashes, .reproduced, [])
        case .failure(let unproven): return (nil, nil, unproven.entities.sorted())
        }
    }
}
