import Backstage
import Foundation
import GRDB

/// What `simulate` checks of a chain's Core Data migrations, which change tables by design (a table
/// renamed with its entity, rebuilt with a renamed column, entities renumbered): each entity of the
/// version upgraded to that comes from an entity of the version upgraded from keeps every row (the
/// same `Z_PK`s, under its own `Z_ENT`), each of its attributes that comes from an attribute (a
/// renamed one too, through every version between) keeps every row's value, and each of its to-one
/// relationships that comes from a to-one keeps every row's link (the `Z_PK` it reaches); the store
/// afterwards has the destination version's entities, tables and columns.
///
/// Failures name the entity, the attribute and the counts, never a value.
struct CoreDataHistoryCheck {
    /// One entity followed from the first version to the last.
    struct Probe {
        var entity: String
        var origin: String
        var before: Side
        var after: Side
    }

    /// Where an entity's rows live in one version's store.
    struct Side {
        var table: String
        var entityNumber: Int
        /// Destination attribute name → its column in this version.
        var columns: [(attribute: String, column: String)]
        /// Destination attribute name → the value Core Data gives a NULL of it on the way (an
        /// optional attribute made mandatory with a default), as SQL: read as that value.
        var fallbacks: [String: String] = [:]
    }

    /// Per probe: its rows' digest, and one per attribute.
    typealias Snapshot = [String: (rows: Int, keys: String, values: [String: String])]

    /// How the store after the upgrade differs from the destination version's (names only).
    typealias SchemaDifferences = [String]

    /// One many-to-many relationship followed from the first version to the last: its join rows,
    /// each pair read as (this side's key, the other side's).
    struct JoinProbe {
        var entity: String
        var relationship: String
        /// A join table's two keys; or, for a to-one made to-many, the entity's table with its
        /// `Z_PK` and the to-one's key column (rows whose link is NULL are no pair).
        var before: (table: String, key: String, other: String)
        var after: (table: String, key: String, other: String)
        /// The key ``Snapshot`` holds its digest under.
        var name: String { "\(entity).\(relationship) (join)" }
    }

    /// The store before the upgrade; the stores of its configurations when it has several.
    let before: [ContainerLocation]
    /// The store after the upgrade; the stores of its configurations when it was split by them
    /// (each entity's rows read where its table is).
    let after: [ContainerLocation]
    /// The tables of each of ``after``, as the catalog has them (Core Data's own included).
    let afterTables: [Set<String>]
    let probes: [Probe]
    let joins: [JoinProbe]
    /// The version upgraded to, and what its store holds (entity numbers, tables and columns): a
    /// chain that left the store of an earlier version fails, whatever its rows.
    let destination: String
    let expected: CoreDataMigrationProgram.StoreSignature

    /// Tables of the migrated stores the check covers instead of the per-table content hashes,
    /// and `Z_METADATA`, whose content changes by design (lower-cased).
    static func coveredTables(_ steps: [UpgradeStep]) -> (replaced: Set<String>, rewritten: Set<String>) {
        var replaced: Set<String> = []
        var rewritten: Set<String> = []
        for step in steps.compactMap({ $0.as(UpgradeStep.CoreDataMigration.self) }) {
            let program = step.program
            replaced.formUnion(program.tablesRead + program.droppedTables + program.rewrites.map(\.table))
            replaced.formUnion(["Z_PRIMARYKEY", "Z_MODELCACHE"])
            rewritten.insert("z_metadata")
        }
        return (replaced, rewritten)
    }

    /// The check of the chain `from` → `to` of `catalog`; nil when no plan of it migrates a Core
    /// Data store or the catalog keeps no model.
    init?(catalog: CatalogFolder, from: String, to: String, steps: [UpgradeStep]) throws {
        guard steps.contains(where: { $0.as(UpgradeStep.CoreDataMigration.self) != nil }),
            let kept = try CoreDataCatalog.keptModel(of: catalog)
        else { return nil }
        let names = catalog.manifest.versions.map(\.name)
        guard let first = names.firstIndex(of: from), let last = names.firstIndex(of: to), first < last,
            let start = kept.version(forCatalogVersion: from), let end = kept.version(forCatalogVersion: to),
            let writable = try catalog.version(from).writableStore?.location
        else { return nil }
        // Stores of configurations: each entity's rows are read where its table is.
        let before = try catalog.version(from).stores.map(\.location)
        let after = try catalog.version(to).stores.map(\.location)
        let afterTables = try catalog.version(to).stores.map { Set($0.tables) }
        guard !after.isEmpty, before.contains(writable) else { return nil }
        // Destination entity → (origin entity, attribute → origin attribute); custom policies end a trace.
        var trace: [String: (origin: String, attributes: [String: String], fallbacks: [String: String])] = [:]
        for entity in start.entities {
            // Attributes, and relationships: a to-one's key column, and a many-to-many's join rows,
            // hold the Z_PKs of the objects reached, which every version keeps: a link lost or
            // pointed elsewhere is a change.
            let attributes = InferredMigration.properties(of: entity, in: start).compactMap { name, property in
                switch property {
                case .attribute: return (name, name)
                case .relationship(let relationship) where !relationship.isTransient: return (name, name)
                case .relationship: return nil
                }
            }
            trace[entity.name] = (entity.name, Dictionary(uniqueKeysWithValues: attributes), [:])
        }
        var previous = start
        for name in names[(first + 1)...last] {
            guard let next = kept.version(forCatalogVersion: name) else { return nil }
            let plans =
                if let mapping = kept.mapping(from: previous.name, to: next.name) {
                    try CoreDataMigrationCompiler.mappedPlans(
                        from: previous, to: next, mappingModel: mapping,
                        customSQL: try CoreDataCatalog.keptPolicySQL(of: catalog).map {
                            .init(destinationEntity: $0.key, statements: [$0.value])
                        })
                } else {
                    try CoreDataMigrationCompiler.inferredPlans(from: previous, to: next)
                }
            var traced: [String: (origin: String, attributes: [String: String], fallbacks: [String: String])] = [:]
            let (sourceSide, nextSide) = (try MigrationSide(previous), try MigrationSide(next))
            for plan in plans where !plan.isCustom {
                guard let source = plan.source, let known = trace[source] else { continue }
                var attributes: [String: String] = [:]
                var fallbacks: [String: String] = [:]
                for (attribute, value) in plan.attributes {
                    guard case .property(let from) = value, let origin = known.attributes[from] else { continue }
                    attributes[attribute] = origin
                    // An optional attribute made mandatory with a default: its NULLs become the default.
                    if let kept = known.fallbacks[from] {
                        fallbacks[attribute] = kept
                    } else if let target = nextSide.attribute(attribute, of: plan.destination), !target.isOptional,
                        let text = target.defaultValueString,
                        sourceSide.attribute(from, of: source)?.isOptional ?? true,
                        let literal = ProgramWriter.defaultSQL(text, type: target.attributeType)
                    {
                        fallbacks[attribute] = literal
                    }
                }
                for (relationship, from) in plan.relationships {
                    if let origin = known.attributes[from] { attributes[relationship] = origin }
                }
                traced[plan.destination] = (known.origin, attributes, fallbacks)
            }
            trace = traced
            previous = next
        }
        let startSide = try MigrationSide(start)
        let endSide = try MigrationSide(end)
        var probes: [Probe] = []
        for (entity, known) in trace.sorted(by: { $0.key < $1.key }) {
            guard let fromNumber = startSide.id(known.origin), let toNumber = endSide.id(entity) else { continue }
            var beforeColumns: [(String, String)] = []
            var afterColumns: [(String, String)] = []
            for (attribute, origin) in known.attributes.sorted(by: { $0.key < $1.key }) {
                guard let old = startSide.column(origin, of: known.origin),
                    let new = endSide.column(attribute, of: entity)
                else { continue }
                beforeColumns.append((attribute, old))
                afterColumns.append((attribute, new))
            }
            probes.append(
                Probe(
                    entity: entity, origin: known.origin,
                    before: Side(
                        table: startSide.table(known.origin), entityNumber: fromNumber, columns: beforeColumns,
                        fallbacks: known.fallbacks),
                    after: Side(table: endSide.table(entity), entityNumber: toNumber, columns: afterColumns)))
        }
        var joins: [JoinProbe] = []
        for (entity, known) in trace.sorted(by: { $0.key < $1.key }) {
            for (relationship, origin) in known.attributes.sorted(by: { $0.key < $1.key }) {
                guard let new = endSide.join(relationship, of: entity),
                    !joins.contains(where: { $0.after.table == new.table.table })
                else { continue }
                func oriented(_ join: (table: LayoutBuilder.JoinTable, entitySide: Bool)) -> (String, String, String) {
                    join.entitySide
                        ? (join.table.table, join.table.entityKey, join.table.inverseKey)
                        : (join.table.table, join.table.inverseKey, join.table.entityKey)
                }
                // A many-to-many before too, or a to-one made to-many: its key column's links.
                let old: (String, String, String)
                if let join = startSide.join(origin, of: known.origin) {
                    old = oriented(join)
                } else if let column = startSide.column(origin, of: known.origin) {
                    old = (startSide.table(known.origin), "Z_PK", column)
                } else {
                    continue
                }
                joins.append(JoinProbe(entity: entity, relationship: relationship, before: old, after: oriented(new)))
            }
        }
        self.before = before
        self.after = after
        self.afterTables = afterTables
        self.probes = probes
        self.joins = joins
        self.destination = end.name
        self.expected = endSide.signature
    }

    /// The digests of the store before the upgrade (`before: true`) or after it, read from a copy.
    func snapshot(in container: AppContainer, before isBefore: Bool) throws -> Snapshot? {
        try read(in: container, before: isBefore)?.snapshot
    }

    /// The digests, and (after the upgrade) how the schema differs from the destination's; nil when
    /// a store is missing. After a split by configuration, each store's digests are those of the
    /// tables it holds, and the destination's entities and tables are those of all the stores.
    private func read(
        in container: AppContainer, before isBefore: Bool
    ) throws -> (snapshot: Snapshot, schema: SchemaDifferences)? {
        let locations = isBefore ? before : after
        guard locations.count > 1 else {
            return try read(locations[0], in: container, before: isBefore, expected: isBefore ? nil : expected)
        }
        var snapshot: Snapshot = [:]
        var schema: SchemaDifferences = []
        for (index, location) in locations.enumerated() {
            // Each configuration's store holds its own tables of the destination's, and every entity.
            let expected =
                isBefore
                ? nil
                : CoreDataMigrationProgram.StoreSignature(
                    entities: expected.entities, tables: expected.tables.filter { afterTables[index].contains($0.key) })
            guard let (part, differences) = try read(location, in: container, before: isBefore, expected: expected)
            else { return nil }
            snapshot.merge(part) { first, _ in first }
            schema += differences.map { "\(location): \($0)" }
        }
        return (snapshot, schema)
    }

    private func read(
        _ location: ContainerLocation, in container: AppContainer, before isBefore: Bool,
        expected: CoreDataMigrationProgram.StoreSignature?
    ) throws -> (snapshot: Snapshot, schema: SchemaDifferences)? {
        let set = StoreFileSet(main: location.url(in: container))
        guard FileManager.default.fileExists(atPath: set.main.path) else { return nil }
        return try StoreInspector.withCopy(of: set) { db in
            let schema =
                try expected.map {
                    $0.differences(from: try CoreDataMigrationProgram.signature(of: db, comparedWith: [$0]))
                } ?? []
            var result: Snapshot = [:]
            for probe in probes {
                let side = isBefore ? probe.before : probe.after
                guard try db.tableExists(side.table) else { continue }
                var keys = SHA256()
                var values = side.columns.map { _ in SHA256() }
                var rows = 0
                let columns =
                    (["\"Z_PK\""]
                    + side.columns.map { column in
                        side.fallbacks[column.attribute].map { "coalesce(\"\(column.column)\", \($0))" }
                            ?? "\"\(column.column)\""
                    }).joined(separator: ", ")
                let cursor = try Row.fetchCursor(
                    db, sql: "SELECT \(columns) FROM \"\(side.table)\" WHERE Z_ENT = ? ORDER BY Z_PK",
                    arguments: [side.entityNumber])
                while let row = try cursor.next() {
                    rows += 1
                    let key: Int64 = row[0]
                    let keyBytes = withUnsafeBytes(of: key.littleEndian) { Array($0) }
                    keys.update(keyBytes)
                    for index in side.columns.indices {
                        values[index].update(keyBytes)
                        Self.update(&values[index], with: row[index + 1] as DatabaseValue)
                    }
                }
                var digests: [String: String] = [:]
                for (index, column) in side.columns.enumerated() {
                    digests[column.attribute] = values[index].finalize()
                }
                result[probe.entity] = (rows, keys.finalize(), digests)
            }
            for join in joins {
                let side = isBefore ? join.before : join.after
                guard try db.tableExists(side.table) else { continue }
                var pairs = SHA256()
                var count = 0
                let cursor = try Row.fetchCursor(
                    db,
                    sql: "SELECT \"\(side.key)\", \"\(side.other)\" FROM \"\(side.table)\" "
                        + "WHERE \"\(side.other)\" IS NOT NULL ORDER BY 1, 2")
                while let row = try cursor.next() {
                    count += 1
                    Self.update(&pairs, with: row[0] as DatabaseValue)
                    Self.update(&pairs, with: row[1] as DatabaseValue)
                }
                result[join.name] = (count, pairs.finalize(), [:])
            }
            return (result, schema)
        }
    }

    private static func update(_ sha: inout SHA256, with value: DatabaseValue) {
        switch value.storage {
        case .null: sha.update([0])
        case .int64(let int): sha.update([1] + withUnsafeBytes(of: int.littleEndian) { Array($0) })
        case .double(let double):
            sha.update([2] + withUnsafeBytes(of: double.bitPattern.littleEndian) { Array($0) })
        case .string(let string):
            sha.update([3] + withUnsafeBytes(of: UInt64(string.utf8.count).littleEndian) { Array($0) })
            sha.update(string.utf8)
        case .blob(let data):
            sha.update([4] + withUnsafeBytes(of: UInt64(data.count).littleEndian) { Array($0) })
            sha.update(data)
        }
    }

    /// One line per entity whose rows, or attribute whose values, the upgrade did not keep.
    func failures(before: Snapshot?, in container: AppContainer) throws -> [String] {
        guard let before else { return [] }
        guard let (after, schema) = try read(in: container, before: false) else {
            let stores = self.after.map(\.description).joined(separator: ", ")
            return ["\(stores) \(self.after.count == 1 ? "is" : "are not all there") after the Core Data migration"]
        }
        var failures: [String] = []
        if !schema.isEmpty {
            failures.append(
                "\(self.after.map(\.description).joined(separator: ", ")) \(self.after.count == 1 ? "is not the store" : "are not the stores") of \(destination) after the upgrade: \(schema.joined(separator: "; "))"
            )
        }
        for probe in probes {
            guard let old = before[probe.entity] else { continue }
            guard let new = after[probe.entity] else {
                failures.append(
                    "entity \(probe.entity): its table \(probe.after.table) is missing from "
                        + self.after.map(\.description).joined(separator: ", "))
                continue
            }
            let from = probe.origin == probe.entity ? "" : " (from \(probe.origin))"
            if old.rows != new.rows {
                failures.append(
                    "\(new.rows > old.rows ? "rows added" : "rows lost"): entity \(probe.entity)\(from) had \(old.rows) "
                        + "rows, has \(new.rows)")
                continue
            }
            if old.keys != new.keys {
                failures.append("rows changed: entity \(probe.entity)\(from) kept \(new.rows) rows but not their Z_PKs")
                continue
            }
            for (attribute, digest) in old.values.sorted(by: { $0.key < $1.key }) where new.values[attribute] != digest
            {
                let origin = probe.before.columns.first { $0.attribute == attribute }?.column ?? attribute
                failures.append(
                    "values changed: \(probe.entity).\(attribute) (column \(origin) before the upgrade) does not keep "
                        + "every row's value")
            }
        }
        for join in joins {
            guard let old = before[join.name] else { continue }
            guard let new = after[join.name] else {
                failures.append(
                    "links lost: \(join.entity).\(join.relationship): its join table \(join.after.table) is missing")
                continue
            }
            if old.rows != new.rows || old.keys != new.keys {
                let was =
                    join.before.key == "Z_PK"
                    ? "column \(join.before.other) of \(join.before.table)" : "join table \(join.before.table)"
                failures.append(
                    "links changed: \(join.entity).\(join.relationship) (\(was) before the upgrade) had \(old.rows) "
                        + "links, has \(new.rows)\(old.rows == new.rows ? ", not the same" : "")"
                )
            }
        }
        return failures
    }
}
