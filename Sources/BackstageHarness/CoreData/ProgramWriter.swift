import Backstage
import Foundation

/// Writes a migration program's table statements from the two sides and the entity plans.
///
/// Source tables are written `{{source:TABLE}}` until the end, when each becomes its name while the
/// program runs: its own when the table is kept, `_BACKSTAGE_SOURCE_TABLE` when it is set aside to
/// be rebuilt. Every destination row keeps its `Z_PK`: a destination table reads one source table.
struct ProgramWriter {
    typealias Plan = CoreDataMigrationCompiler.EntityPlan

    /// A relationship's links as a query of columns `a` (the owner's key), `b` (the key of the object
    /// it reaches), `oa` (b's position in a's ordered relationship) and `ob` (a's position in b's).
    struct Pairs {
        var sql: String
    }

    let source: MigrationSide
    let destination: MigrationSide
    let plans: [String: Plan]
    let customSQL: [CoreDataMigrationCompiler.CustomSQL]
    private(set) var tableStatements: [String] = []
    /// The source tables whose rows are copied, with the numbers of the entities they hold: a row of
    /// none of them is refused before anything changes.
    private(set) var entityChecks: [(table: String, entities: [Int])] = []
    private(set) var rewrites: [CoreDataMigrationProgram.TableRewrite] = []
    private(set) var kept: Set<String> = []
    private(set) var dropped: Set<String> = []
    private(set) var assumptions: [String] = []
    /// Positions numbered after the rows are in, for ordered relationships the source did not order,
    /// in a table some of whose rows the developer's SQL writes.
    private var orderUpdates: [String] = []
    /// Positions numbered from the source rows before they are copied, for ordered relationships the
    /// source did not order (every other table).
    private var numbered: [Positions] = []

    /// The positions of the rows of `table` in the ordered to-many inverse of the to-one whose key is
    /// `keyColumn`: numbered 1, 2, … by `Z_PK` within each key, into a temporary table the copy of
    /// the rows reads in key order. Numbered afterwards (an `UPDATE` of every row), the positions cost
    /// a lookup of each row in the order of its key, not of the table: 30 s of a 200 MB store's 42.
    struct Positions: Hashable {
        var table: String
        var keyColumn: String
        var order: String
        var name: String { "_BACKSTAGE_ORDER_\(table)_\(order)" }
        /// The position of the source row `s`.
        var lookup: String { "(SELECT n FROM temp.\(name) WHERE pk = s.Z_PK)" }
    }

    init(
        source: MigrationSide, destination: MigrationSide, plans: [Plan],
        customSQL: [CoreDataMigrationCompiler.CustomSQL]
    ) throws {
        self.source = source
        self.destination = destination
        self.plans = Dictionary(plans.map { ($0.destination, $0) }, uniquingKeysWith: { a, _ in a })
        self.customSQL = customSQL
    }

    static func aside(_ table: String) -> String { "_BACKSTAGE_SOURCE_" + table }

    private mutating func note(_ sentence: String) {
        if !assumptions.contains(sentence) { assumptions.append(sentence) }
    }

    // MARK: Entity tables

    /// The source table each destination entity table reads.
    private func sourceTable(of table: String) throws -> String? {
        let sources = Set(
            destination.entities(in: table).compactMap { entity -> String? in
                guard let plan = plans[entity.name], !plan.isCustom, let from = plan.source else { return nil }
                return source.table(from)
            })
        if sources.count > 1 {
            throw CoreDataMigrationError(reason: .mergesTables(table: table, sources: sources.sorted()))
        }
        return sources.first
    }

    /// `CASE s.Z_ENT WHEN 1 THEN 2 … END` over every entity of a source table that has a destination.
    private func renumbered(_ column: String, table: String) -> String {
        let pairs = source.entities(in: table).compactMap { entity -> (Int, Int)? in
            guard let target = plans.values.first(where: { $0.source == entity.name })?.destination,
                let id = destination.id(target)
            else { return nil }
            return (entity.id, id)
        }
        if pairs.allSatisfy({ $0.0 == $0.1 }) { return column }
        return "CASE \(column) " + pairs.map { "WHEN \($0.0) THEN \($0.1)" }.joined(separator: " ") + " END"
    }

    /// The value of every column of `table` for the rows of destination entity `entity`.
    private mutating func expressions(for entity: String, plan: Plan, in table: String) throws -> [String] {
        guard let from = plan.source else { return [] }
        var result: [String] = []
        for column in destination.columns[table] ?? [] {
            guard let role = destination.roles[table]?[column] else {
                result.append("NULL")
                continue
            }
            switch role {
            case .attribute(let owner, let property):
                guard destination.lineage(entity).contains(owner) else {
                    result.append("NULL")
                    continue
                }
                result.append(attributeValue(property, of: entity, plan: plan, from: from))
            case .toOne(let owner, let relationship):
                guard destination.lineage(entity).contains(owner) else {
                    result.append("NULL")
                    continue
                }
                result.append(try key(relationship, of: entity, plan: plan, from: from))
            case .entityOf(let owner, let relationship):
                guard destination.lineage(entity).contains(owner) else {
                    result.append("NULL")
                    continue
                }
                result.append(try entityOfKey(relationship, of: entity, plan: plan, from: from))
            case .order(let owner, let relationship):
                guard destination.lineage(entity).contains(owner) else {
                    result.append("NULL")
                    continue
                }
                result.append(try position(relationship, of: entity, plan: plan, from: from))
            }
        }
        return result
    }

    /// The expressions of a row that keeps every column: its own columns copied, the others NULL.
    private func unchanged(_ entity: String, in table: String) -> [String] {
        let lineage = Set(destination.lineage(entity))
        return (destination.columns[table] ?? []).map { column in
            switch destination.roles[table]?[column] {
            case .attribute(let owner, _)?, .toOne(let owner, _)?, .entityOf(let owner, _)?, .order(let owner, _)?:
                lineage.contains(owner) ? "s." + column : "NULL"
            case nil: "NULL"
            }
        }
    }

    private mutating func attributeValue(_ property: String, of entity: String, plan: Plan, from: String) -> String {
        let target = destination.attribute(property, of: entity)
        var value = "NULL"
        var hasSource = false
        switch plan.attributes[property] ?? .none {
        case .property(let name):
            if let column = source.column(name, of: from), source.attribute(name, of: from) != nil {
                value = "s." + column
                hasSource = true
            }
        case .literal(let literal):
            value = literal
            hasSource = true
        case .none: break
        }
        guard let target, let text = target.defaultValueString else { return value }
        guard let fallback = defaultLiteral(text, type: target.attributeType, property: "\(entity).\(property)") else {
            return value
        }
        if !hasSource { return fallback }
        let optionalBefore =
            if case .property(let name) = plan.attributes[property] ?? .none {
                source.attribute(name, of: from)?.isOptional ?? true
            } else { true }
        return !target.isOptional && optionalBefore ? "coalesce(\(value), \(fallback))" : value
    }

    /// A model default as SQL, as Core Data stores the type; nil (with a note) where no store shows it.
    private mutating func defaultLiteral(_ text: String, type: CoreDataAttributeType, property: String) -> String? {
        if let literal = Self.defaultSQL(text, type: type) { return literal }
        note("\(property): its default value is not written (a \(type.rawValue) default Backstage cannot convert)")
        return nil
    }

    /// The SQL literal Core Data stores for the default `text` of an attribute of `type`; nil when
    /// Backstage cannot convert it.
    static func defaultSQL(_ text: String, type: CoreDataAttributeType) -> String? {
        switch type {
        case .boolean:
            switch text.lowercased() {
            case "yes", "true", "1": return "1"
            case "no", "false", "0": return "0"
            default: break
            }
        case .integer16, .integer32, .integer64:
            if let value = Int(text) { return "\(value)" }
        case .double, .float, .decimal, .date:
            if let value = Double(text) { return "\(value)" }
        case .string, .uri:
            return CoreDataMigrationCompiler.quoted(text)
        default: break
        }
        return nil
    }

    /// The links of source relationship `relationship` of source entity `entity`.
    private func pairs(_ relationship: String, of entity: String) throws -> Pairs {
        guard let found = source.relationship(relationship, of: entity) else {
            throw CoreDataMigrationError(
                reason: .unsupportedRelationship(
                    entity: entity, relationship: relationship, why: "the source model has no such relationship"))
        }
        if !found.isToMany, let key = source.column(relationship, of: entity) {
            let order = source.orderColumn(relationship, of: entity) ?? "NULL"
            return Pairs(
                sql:
                    "SELECT Z_PK AS a, \(key) AS b, NULL AS oa, \(order) AS ob FROM {{source:\(source.table(entity))}} "
                    + "WHERE \(key) IS NOT NULL")
        }
        if let inverse = found.inverseName, let back = source.relationship(inverse, of: found.destinationEntity),
            !back.isToMany, let key = source.column(inverse, of: found.destinationEntity)
        {
            let order = source.orderColumn(inverse, of: found.destinationEntity) ?? "NULL"
            return Pairs(
                sql: "SELECT \(key) AS a, Z_PK AS b, \(order) AS oa, NULL AS ob FROM "
                    + "{{source:\(source.table(found.destinationEntity))}} WHERE \(key) IS NOT NULL")
        }
        if let (join, entitySide) = source.join(relationship, of: entity), !join.reflexive {
            let (mine, other) = entitySide ? (join.entityKey, join.inverseKey) : (join.inverseKey, join.entityKey)
            let (oa, ob) =
                entitySide ? (join.relationshipOrder, join.inverseOrder) : (join.inverseOrder, join.relationshipOrder)
            return Pairs(
                sql: "SELECT \(mine) AS a, \(other) AS b, \(oa ?? "NULL") AS oa, \(ob ?? "NULL") AS ob "
                    + "FROM {{source:\(join.table)}}")
        }
        throw CoreDataMigrationError(
            reason: .unsupportedRelationship(
                entity: entity, relationship: relationship,
                why: "a reflexive many-to-many relationship's rows are not moved by Backstage"))
    }

    /// The links of destination relationship `relationship` of `entity` as they were in the source:
    /// from its own source relationship, else from its inverse's (reversed); nil when neither has one.
    private func sourcePairs(_ relationship: String, of entity: String) throws -> (Pairs, reversed: Bool)? {
        let owner = destination.lineage(entity).first { plans[$0]?.relationships[relationship] != nil } ?? entity
        if let plan = plans[owner], let from = plan.source, let name = plan.relationships[relationship] {
            return (try pairs(name, of: from), false)
        }
        guard let found = destination.relationship(relationship, of: entity), let inverse = found.inverseName else {
            return nil
        }
        let target = found.destinationEntity
        let inverseOwner = destination.lineage(target).first { plans[$0]?.relationships[inverse] != nil } ?? target
        if let plan = plans[inverseOwner], let from = plan.source, let name = plan.relationships[inverse] {
            return (try pairs(name, of: from), true)
        }
        return nil
    }

    /// The to-one key of `relationship` for a row `s` of the source table.
    private func key(_ relationship: String, of entity: String, plan: Plan, from: String) throws -> String {
        if let name = plan.relationships[relationship], let old = source.relationship(name, of: from), !old.isToMany,
            let column = source.column(name, of: from)
        {
            return "s." + column
        }
        guard let (links, reversed) = try sourcePairs(relationship, of: entity) else { return "NULL" }
        return reversed
            ? "(SELECT p.a FROM (\(links.sql)) AS p WHERE p.b = s.Z_PK ORDER BY p.a LIMIT 1)"
            : "(SELECT p.b FROM (\(links.sql)) AS p WHERE p.a = s.Z_PK ORDER BY p.oa, p.b LIMIT 1)"
    }

    /// The entity number of the object the to-one reaches.
    private func entityOfKey(_ relationship: String, of entity: String, plan: Plan, from: String) throws -> String {
        if let name = plan.relationships[relationship], let column = source.entityColumn(name, of: from) {
            return renumbered("s." + column, table: source.table(from))
        }
        guard let target = destination.relationship(relationship, of: entity)?.destinationEntity,
            let targetTable = try sourceTable(of: destination.table(target))
        else { return "NULL" }
        let keyValue = try key(relationship, of: entity, plan: plan, from: from)
        return "(SELECT \(renumbered("t.Z_ENT", table: targetTable)) FROM {{source:\(targetTable)}} AS t "
            + "WHERE t.Z_PK = \(keyValue))"
    }

    /// The row's position in the ordered to-many inverse of its to-one `relationship`.
    private mutating func position(_ relationship: String, of entity: String, plan: Plan, from: String) throws -> String
    {
        if let name = plan.relationships[relationship], let column = source.orderColumn(name, of: from) {
            return "s." + column
        }
        guard let keyColumn = destination.column(relationship, of: entity),
            let order = destination.orderColumn(relationship, of: entity)
        else { return "NULL" }
        note(
            "\(entity).\(relationship): an ordered relationship's positions are numbered 1, 2, … in key order where the source had none"
        )
        let table = destination.table(entity)
        if !destination.entities(in: table).contains(where: { plans[$0.name]?.isCustom == true }) {
            let positions = Positions(table: table, keyColumn: keyColumn, order: order)
            if !numbered.contains(positions) { numbered.append(positions) }
            return positions.lookup
        }
        // The developer's SQL writes rows of this table too: they are numbered with the others, once in.
        let update =
            "UPDATE \(table) SET \(order) = w.n FROM (SELECT Z_PK AS pk, row_number() OVER (PARTITION BY "
            + "\(keyColumn) ORDER BY Z_PK) AS n FROM \(table) WHERE \(keyColumn) IS NOT NULL) AS w "
            + "WHERE \(table).Z_PK = w.pk"
        if !orderUpdates.contains(update) { orderUpdates.append(update) }
        return "NULL"
    }

    // MARK: Writing

    mutating func write() throws {
        var inserts: [String] = []
        var numbering: [String] = []
        var numberedDone: [String] = []
        var rebuilt: [String] = []
        var sourceOf: [String: [String]] = [:]
        for table in destination.entityTables {
            let from = try sourceTable(of: table)
            var groups: [(expressions: [String], entities: [(Int, Int)])] = []
            var keptCandidate =
                from == table && !destination.entities(in: table).contains { plans[$0.name]?.isCustom == true }
            for entity in destination.entities(in: table) {
                guard let plan = plans[entity.name], let origin = plan.source, !plan.isCustom,
                    let sourceID = source.id(origin)
                else { continue }
                let values = try expressions(for: entity.name, plan: plan, in: table)
                if sourceID != entity.id { keptCandidate = false }
                if let index = groups.firstIndex(where: { $0.expressions == values }) {
                    groups[index].entities.append((sourceID, entity.id))
                } else {
                    groups.append((values, [(sourceID, entity.id)]))
                }
            }
            let columns = destination.columns[table] ?? []
            if let from {
                let mapped = Set(groups.flatMap { $0.entities.map(\.0) })
                let present = Set(source.entities(in: from).map(\.id))
                let identity = groups.allSatisfy { group in
                    group.entities.allSatisfy { pair in
                        let name = destination.entities(in: table).first { $0.id == pair.1 }?.name ?? ""
                        return group.expressions == unchanged(name, in: table)
                    }
                }
                let sameStatement =
                    source.builder.tables.first { $0.name == table }?.sql
                    == destination.builder.tables.first { $0.name == table }?.sql
                if keptCandidate && identity && sameStatement && mapped == present {
                    kept.insert(table)
                    continue
                }
            }
            rebuilt.append(table)
            guard let from else { continue }
            sourceOf[table] = [from]
            guard !groups.isEmpty else { continue }
            if !entityChecks.contains(where: { $0.table == from }) {
                entityChecks.append((from, source.entities(in: from).map(\.id).sorted()))
            }
            let copy = Self.copy(
                table, columns: columns, from: from, groups: groups, all: source.entities(in: from).map(\.id))
            for positions in numbered where positions.table == table {
                let key = columns.firstIndex(of: positions.keyColumn).map { copy.values[$0] } ?? "NULL"
                let rows = copy.entities.map { "\($0) AND " } ?? ""
                numbering += [
                    "CREATE TEMP TABLE \(positions.name) (pk INTEGER PRIMARY KEY, n INTEGER)",
                    "INSERT INTO temp.\(positions.name) (pk, n) SELECT s.Z_PK, row_number() OVER (PARTITION BY "
                        + "\(key) ORDER BY s.Z_PK) FROM {{source:\(from)}} AS s WHERE \(rows)(\(key)) IS NOT NULL "
                        + "ORDER BY s.Z_PK",
                ]
                numberedDone.append("DROP TABLE temp.\(positions.name)")
            }
            inserts.append(copy.statement)
        }

        var joinInserts: [String] = []
        for join in destination.builder.joins {
            let statement = destination.builder.tables.first { $0.name == join.table }?.sql
            if let old = source.builder.joins.first(where: { $0.table == join.table }),
                source.builder.tables.first(where: { $0.name == join.table })?.sql == statement,
                plans[join.entity]?.relationships[join.relationship] == old.relationship,
                plans[join.entity]?.source == old.entity
            {
                kept.insert(join.table)
                continue
            }
            rebuilt.append(join.table)
            if join.reflexive {
                if try sourcePairs(join.relationship, of: join.entity) != nil {
                    throw CoreDataMigrationError(
                        reason: .unsupportedRelationship(
                            entity: join.entity, relationship: join.relationship,
                            why: "a reflexive many-to-many relationship's rows are not moved by Backstage"))
                }
                continue
            }
            guard let (links, reversed) = try sourcePairs(join.relationship, of: join.entity) else { continue }
            let (a, b, oa, ob) = reversed ? ("p.b", "p.a", "p.ob", "p.oa") : ("p.a", "p.b", "p.oa", "p.ob")
            var columns = [join.entityKey, join.inverseKey]
            var values = [a, b]
            if let order = join.relationshipOrder {
                columns.append(order)
                values.append("coalesce(\(oa), row_number() OVER (PARTITION BY \(a) ORDER BY \(b)))")
            }
            if let order = join.inverseOrder {
                columns.append(order)
                values.append("coalesce(\(ob), row_number() OVER (PARTITION BY \(b) ORDER BY \(a)))")
            }
            let insert =
                "INSERT INTO \(join.table) (\(columns.joined(separator: ", "))) SELECT "
                + "\(values.joined(separator: ", ")) FROM (\(links.sql)) AS p"
            joinInserts.append(insert)
            sourceOf[join.table] = Self.sourceTables(in: insert)
        }

        let custom = try customSQL.flatMap { entry -> [String] in
            guard destination.id(entry.destinationEntity) != nil else {
                throw CoreDataMigrationError(reason: .mappingModelDoesNotFit(entity: entry.destinationEntity))
            }
            return entry.statements
        }
        for statement in custom {
            let table = destination.table(
                customSQL.first { $0.statements.contains(statement) }?.destinationEntity ?? "")
            sourceOf[table, default: []] += Self.sourceTables(in: statement)
        }

        let sourceTables = source.builder.tables.map(\.name)
        let aside = sourceTables.filter { !kept.contains($0) }
        dropped = Set(aside.filter { old in !sourceOf.values.contains { $0.contains(old) } })
        var statements: [String] = aside.map { "ALTER TABLE \($0) RENAME TO \(Self.aside($0))" }
        statements += destination.builder.tables.filter { !kept.contains($0.name) }.map(\.sql)
        statements += numbering + inserts + custom + joinInserts + orderUpdates + numberedDone
        statements += aside.map { "DROP TABLE \(Self.aside($0))" }
        for index in source.builder.indexes where kept.contains(index.table) {
            if !destination.builder.indexes.contains(where: { $0.name == index.name && $0.sql == index.sql }) {
                statements.append("DROP INDEX \(index.name)")
            }
        }
        for index in destination.builder.indexes {
            if kept.contains(index.table),
                source.builder.indexes.contains(where: { $0.name == index.name && $0.sql == index.sql })
            {
                continue
            }
            statements.append(index.sql)
        }
        tableStatements = try statements.map { try resolve($0, aside: Set(aside)) }
        rewrites = rebuilt.map { .init(table: $0, sources: Array(Set(sourceOf[$0] ?? [])).sorted()) }
    }

    /// The copy of a destination table's rows from its source table in one pass, in `Z_PK` order (rows
    /// appended, each page filled once), every entity's values told apart by `Z_ENT` where they
    /// differ: `CASE s.Z_ENT WHEN 3 THEN s.ZSCENT END`. One `INSERT` per group of entities read the
    /// source once for each, through its `Z_ENT` index, and inserted each group's keys between the
    /// others'. `entities` is the filter on the source's rows when some of its entities have no
    /// destination (the scan then told `NOT INDEXED`); `values` the value of each of `columns`.
    static func copy(
        _ table: String, columns: [String], from: String, groups: [(expressions: [String], entities: [(Int, Int)])],
        all: [Int]
    ) -> (statement: String, values: [String], entities: String?) {
        let rows = groups.flatMap { group in group.entities.map { (source: $0.0, id: $0.1, values: group.expressions) }
        }
        .sorted { $0.source < $1.source }
        let entity =
            rows.count == 1
            ? "\(rows[0].id)"
            : "CASE s.Z_ENT " + rows.map { "WHEN \($0.source) THEN \($0.id)" }.joined(separator: " ") + " END"
        let values = columns.indices.map { index -> String in
            let each = rows.map { $0.values[index] }
            if Set(each).count == 1 { return each[0] }
            return "CASE s.Z_ENT "
                + rows.filter { $0.values[index] != "NULL" }.map { "WHEN \($0.source) THEN \($0.values[index])" }
                .joined(separator: " ") + " END"
        }
        let ids = rows.map(\.source)
        let entities =
            Set(ids) == Set(all) ? nil : "s.Z_ENT IN (\(ids.map(String.init).joined(separator: ", ")))"
        let statement =
            "INSERT INTO \(table) (\((["Z_PK", "Z_ENT", "Z_OPT"] + columns).joined(separator: ", "))) "
            + "SELECT \((["s.Z_PK", entity, "s.Z_OPT"] + values).joined(separator: ", ")) FROM {{source:\(from)}} AS s"
            + (entities.map { " NOT INDEXED WHERE \($0)" } ?? "")
        return (statement, values, entities)
    }

    /// Every `{{source:TABLE}}` a statement names.
    static func sourceTables(in statement: String) -> [String] {
        statement.components(separatedBy: "{{source:").dropFirst().compactMap { part in
            part.range(of: "}}").map { String(part[..<$0.lowerBound]) }
        }
    }

    /// The statement with its placeholders replaced.
    private func resolve(_ statement: String, aside: Set<String>) throws -> String {
        var result = ""
        var rest = Substring(statement)
        while let open = rest.range(of: "{{") {
            result += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw CoreDataMigrationError(reason: .unknownPlaceholder(String(rest[open.lowerBound...].prefix(40))))
            }
            let name = String(rest[open.upperBound..<close.lowerBound])
            if name.hasPrefix("source:"), source.builder.tables.contains(where: { $0.name == name.dropFirst(7) }) {
                let table = String(name.dropFirst(7))
                result += aside.contains(table) ? Self.aside(table) : table
            } else if name.hasPrefix("entity:"), let id = destination.id(String(name.dropFirst(7))) {
                result += "\(id)"
            } else {
                throw CoreDataMigrationError(reason: .unknownPlaceholder(name))
            }
            rest = rest[close.upperBound...]
        }
        return result + rest
    }

    /// `Z_PRIMARYKEY` rebuilt with the destination's entities, each `Z_MAX` kept from its source
    /// entity and raised to the largest key of its table; `Z_MODELCACHE` emptied.
    func bookkeeping(writesModelCache: Bool) -> [String] {
        var statements = [
            "CREATE TEMP TABLE _BACKSTAGE_KEYS AS SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY",
            "DELETE FROM Z_PRIMARYKEY",
        ]
        for numbered in destination.builder.numbered {
            let name = numbered.entity.name
            let kept =
                plans[name]?.source.map {
                    "coalesce((SELECT Z_MAX FROM temp._BACKSTAGE_KEYS WHERE Z_NAME = \(CoreDataMigrationCompiler.quoted($0))), 0)"
                } ?? "0"
            statements.append(
                "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\(numbered.id), "
                    + "\(CoreDataMigrationCompiler.quoted(name)), \(numbered.parentID), \(kept))")
        }
        statements.append("DROP TABLE temp._BACKSTAGE_KEYS")
        let tables = Set(destination.builder.tables.map(\.name))
        for numbered in destination.builder.numbered where tables.contains(destination.table(numbered.entity.name)) {
            statements.append(
                "UPDATE Z_PRIMARYKEY SET Z_MAX = max(IFNULL(Z_MAX, 0), (SELECT IFNULL(MAX(Z_PK), 0) FROM "
                    + "\(destination.table(numbered.entity.name)))) WHERE Z_ENT = \(numbered.id)")
        }
        if writesModelCache { statements.append("DELETE FROM Z_MODELCACHE") }
        return statements
    }
}
