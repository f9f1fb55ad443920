import Backstage
import Foundation
import GRDB

/// Makes a generated store of a catalog made from a Core Data model keep Core Data's invariants,
/// which the schema-driven generator does not know: each row's `Z_ENT` is an entity of its table's
/// hierarchy and never an abstract one; each attribute holds what Core Data stores for its type,
/// only in rows of its entity, and a mandatory one a value; `Z_PRIMARYKEY.Z_MAX` is at least every key of its entity's
/// table; every to-one key reaches a live row of its destination entity (or a sub-entity), its
/// `Z<n>_` entity column holds that row's `Z_ENT`, and a row of an entity without the relationship
/// holds none (a mandatory one always reaches a row when there is one); every join-table row
/// reaches live rows of its two entities.
///
/// Only generated stores are touched: rows the generator made are re-pointed (by their key, so the
/// same seed gives the same store) or, in join tables, dropped.
public enum CoreDataFixturePass {
    /// Runs the pass on `store`, generated from catalog version `version`'s `schema`, when
    /// `catalog` was made from a model (else does nothing).
    public static func apply(
        to store: StoreFileSet, schema: StoreSchema, version: String, catalog: CatalogFolder
    ) throws {
        guard schema.coreData != nil, let kept = try CoreDataCatalog.keptModel(of: catalog),
            let model = kept.version(forCatalogVersion: version)
        else { return }
        try apply(to: store, schema: schema, model: model)
    }

    /// Runs the pass on `store`, generated from `schema`, the store of model version `model`.
    public static func apply(to store: StoreFileSet, schema: StoreSchema, model: CoreDataModelVersion) throws {
        guard let facts = schema.coreData else { return }
        let layout = try CoreDataStoreLayout(model)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: store.main.path, configuration: configuration)
        defer { try? queue.close() }
        try queue.inTransaction { db in
            let pass = Pass(db: db, facts: facts, model: model, layout: layout)
            try pass.entities()
            try pass.attributeValues()
            try pass.toOneKeys()
            try pass.joinTables()
            try pass.primaryKeys()
            return .commit
        }
    }

    private struct Pass {
        let db: Database
        let facts: CoreDataFacts
        let model: CoreDataModelVersion
        let layout: CoreDataStoreLayout

        /// The entity numbered `id` and every entity under it.
        func family(_ id: Int) -> [CoreDataFacts.Entity] {
            var result = facts.entities.filter { $0.id == id }
            var index = 0
            while index < result.count {
                let parent = result[index].id
                result += facts.entities.filter { $0.superID == parent && $0.id != parent }
                index += 1
            }
            return result
        }

        func concrete(_ entities: [CoreDataFacts.Entity]) -> [Int] {
            entities.filter { model.entity(named: $0.name)?.isAbstract != true }.map(\.id)
        }

        func id(of name: String) -> Int? { facts.entities.first { $0.name == name }?.id }

        func exists(_ table: String) throws -> Bool { try db.tableExists(table) }

        func columns(of table: String) throws -> Set<String> { Set(try db.columns(in: table).map(\.name)) }

        static func list(_ ids: [Int]) -> String { ids.map(String.init).joined(separator: ", ") }

        /// `CASE (key) % n WHEN 0 THEN ids[0] ... END`: one of `ids` by `key`, the same each run.
        static func pick(_ ids: [Int], by key: String) -> String {
            guard ids.count > 1 else { return "\(ids.first ?? 0)" }
            let whens = ids.enumerated().map { "WHEN \($0.offset) THEN \($0.element)" }.joined(separator: " ")
            return "CASE abs(\(key)) % \(ids.count) \(whens) END"
        }

        /// Rows whose `Z_ENT` is not a concrete entity of their table get one.
        func entities() throws {
            for table in Set(facts.entities.map(\.table)).sorted() where try exists(table) {
                let allowed = concrete(facts.entities.filter { $0.table == table })
                guard !allowed.isEmpty else { continue }
                try db.execute(
                    sql: """
                        UPDATE \(table.quotedSQLIdentifier) SET Z_ENT = \(Self.pick(allowed, by: "Z_PK"))
                        WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(Self.list(allowed)))
                        """)
            }
        }

        /// Each attribute's column holds what Core Data stores for its type, and only in rows of its
        /// entity or a sub-entity: a sibling entity's rows hold NULL there; a date is a number of
        /// seconds since 2001 (2020–2025), never a word; an Integer 16 or 32 fits its width; a
        /// Boolean is 0 or 1; a number is a number; a mandatory attribute holds a value (its default,
        /// else another row's value of it).
        func attributeValues() throws {
            for entity in model.entities {
                guard let ownerID = id(of: entity.name), let owner = facts.entities.first(where: { $0.id == ownerID }),
                    try exists(owner.table)
                else { continue }
                let table = owner.table.quotedSQLIdentifier
                let present = try columns(of: owner.table)
                let owners = Self.list(family(ownerID).map(\.id))
                for attribute in entity.attributes where !attribute.isTransient && !attribute.isDerived {
                    guard let name = layout.propertyColumns[entity.name]?[attribute.name], present.contains(name)
                    else { continue }
                    let column = name.quotedSQLIdentifier
                    let mine = "Z_ENT IN (\(owners))"
                    try db.execute(sql: "UPDATE \(table) SET \(column) = NULL WHERE NOT (\(mine))")
                    let number = "typeof(\(column)) IN ('integer', 'real')"
                    let fix: String? =
                        switch attribute.attributeType {
                        case .date:
                            // Seconds since 2001 as Core Data writes them: no 64-bit extremes (±2^63 s
                            // is no date NSDate can hold).
                            "\(column) = 600000000.0 + abs(Z_PK * 7919) % 157680000 + (abs(Z_PK) % 1000) / 1000.0 "
                                + "WHERE \(column) IS NOT NULL AND (NOT \(number) OR \(column) > 1e11 OR \(column) < -1e11)"
                        case .uuid:
                            // A UUID is 16 bytes.
                            "\(column) = CAST(printf('%016d', abs(Z_PK * 7919) % 10000000000000000) AS BLOB) "
                                + "WHERE \(column) IS NOT NULL AND (typeof(\(column)) != 'blob' OR length(\(column)) != 16)"
                        case .integer16:
                            "\(column) = abs(Z_PK * 7919) % 1000 WHERE \(column) IS NOT NULL AND "
                                + "(typeof(\(column)) != 'integer' OR \(column) NOT BETWEEN -32768 AND 32767)"
                        case .integer32:
                            "\(column) = abs(Z_PK * 7919) % 100000 WHERE \(column) IS NOT NULL AND "
                                + "(typeof(\(column)) != 'integer' OR \(column) NOT BETWEEN -2147483648 AND 2147483647)"
                        case .integer64:
                            "\(column) = abs(Z_PK * 7919) % 10000000 WHERE \(column) IS NOT NULL AND "
                                + "typeof(\(column)) != 'integer'"
                        case .boolean:
                            "\(column) = abs(Z_PK) % 2 WHERE \(column) IS NOT NULL AND \(column) NOT IN (0, 1)"
                        case .double, .float, .decimal:
                            "\(column) = (abs(Z_PK * 7919) % 1000000) / 100.0 WHERE \(column) IS NOT NULL AND "
                                + "(NOT \(number) OR \(column) > 1e12 OR \(column) < -1e12)"
                        default: nil
                        }
                    if let fix { try db.execute(sql: "UPDATE \(table) SET \(fix) AND \(mine)") }
                    guard !attribute.isOptional else { continue }
                    // Mandatory: its default, else the value of another row of the entity.
                    if let value = attribute.defaultValueString {
                        // As Core Data stores it (a Boolean's NO is 0), else the text as it is.
                        let literal =
                            ProgramWriter.defaultSQL(value, type: attribute.attributeType)
                            ?? ([.string, .uri].contains(attribute.attributeType) || Double(value) == nil
                                ? "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
                                : value)
                        try db.execute(
                            sql: "UPDATE \(table) SET \(column) = \(literal) WHERE \(column) IS NULL AND \(mine)")
                        continue
                    }
                    let count =
                        try Int.fetchOne(
                            db, sql: "SELECT count(*) FROM \(table) WHERE \(column) IS NOT NULL AND \(mine)") ?? 0
                    guard count > 0 else { continue }
                    try db.execute(sql: "DROP TABLE IF EXISTS temp.backstage_values")
                    try db.execute(sql: "CREATE TEMP TABLE backstage_values (n INTEGER PRIMARY KEY, v)")
                    try db.execute(
                        sql: """
                            INSERT INTO temp.backstage_values (v) SELECT \(column) FROM \(table) WHERE \(column) IS NOT NULL \
                            AND \(mine) ORDER BY Z_PK
                            """)
                    try db.execute(
                        sql: """
                            UPDATE \(table) SET \(column) = (SELECT v FROM temp.backstage_values WHERE n = 1 + \
                            abs(\(table).Z_PK * 7919) % \(count)) WHERE \(column) IS NULL AND \(mine)
                            """)
                    try db.execute(sql: "DROP TABLE temp.backstage_values")
                }
            }
        }

        /// The live rows of `entity` and its sub-entities, numbered from 1, in a temporary table.
        func targets(_ entity: CoreDataFacts.Entity) throws -> (table: String, count: Int) {
            let ids = concrete(family(entity.id))
            try db.execute(sql: "DROP TABLE IF EXISTS temp.backstage_targets")
            try db.execute(
                sql: """
                    CREATE TEMP TABLE backstage_targets (n INTEGER PRIMARY KEY, pk INTEGER, ent INTEGER)
                    """)
            if try exists(entity.table), !ids.isEmpty {
                try db.execute(
                    sql: """
                        INSERT INTO temp.backstage_targets (pk, ent) SELECT Z_PK, Z_ENT FROM \
                        \(entity.table.quotedSQLIdentifier) WHERE Z_ENT IN (\(Self.list(ids))) ORDER BY Z_PK
                        """)
            }
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.backstage_targets") ?? 0
            return ("temp.backstage_targets", count)
        }

        /// Every to-one key reaches a live row of its destination, or is NULL.
        func toOneKeys() throws {
            for entity in model.entities {
                guard let ownerID = id(of: entity.name), let owner = facts.entities.first(where: { $0.id == ownerID })
                else { continue }
                for relationship in entity.relationships where !relationship.isToMany && !relationship.isTransient {
                    guard let column = layout.propertyColumns[entity.name]?[relationship.name],
                        let destinationID = id(of: relationship.destinationEntity),
                        let destination = facts.entities.first(where: { $0.id == destinationID }),
                        try exists(owner.table)
                    else { continue }
                    let table = owner.table.quotedSQLIdentifier
                    let present = try columns(of: owner.table)
                    guard present.contains(column) else { continue }
                    let entityColumn = "Z\(destinationID)_" + column.dropFirst()
                    let hasEntityColumn = present.contains(entityColumn)
                    let owners = Self.list(family(ownerID).map(\.id))
                    // Rows of other entities in the table do not have the relationship.
                    try db.execute(
                        sql: "UPDATE \(table) SET \(column) = NULL"
                            + (hasEntityColumn ? ", \(entityColumn) = NULL" : "") + " WHERE Z_ENT NOT IN (\(owners))")
                    let (targets, count) = try targets(destination)
                    let mandatory = !relationship.isOptional || (relationship.minCount ?? 0) > 0
                    if count == 0 {
                        try db.execute(sql: "UPDATE \(table) SET \(column) = NULL WHERE Z_ENT IN (\(owners))")
                    } else {
                        try db.execute(
                            sql: """
                                UPDATE \(table) SET \(column) = (SELECT pk FROM \(targets) WHERE n = 1 + \
                                abs(\(table).Z_PK * 7919) % \(count))
                                WHERE Z_ENT IN (\(owners)) AND (\(column) NOT IN (SELECT pk FROM \(targets))\
                                \(mandatory ? " OR \(column) IS NULL" : ""))
                                """)
                    }
                    if hasEntityColumn {
                        try db.execute(
                            sql: """
                                UPDATE \(table) SET \(entityColumn) = (SELECT ent FROM \(targets) WHERE pk = \
                                \(table).\(column)) WHERE Z_ENT IN (\(owners))
                                """)
                    }
                    // The inverse an ordered to-many: each row's position among its parent's, from 1,
                    // set exactly where the key is.
                    let orderColumn = "Z_FOK_" + column.dropFirst()
                    if let inverse = relationship.inverseName.flatMap({ name in
                        model.entity(named: relationship.destinationEntity)?.relationships.first { $0.name == name }
                    }), inverse.isToMany, inverse.isOrdered, present.contains(orderColumn) {
                        try db.execute(sql: "DROP TABLE IF EXISTS temp.backstage_order")
                        try db.execute(
                            sql: """
                                CREATE TEMP TABLE backstage_order (pk INTEGER PRIMARY KEY, n INTEGER);
                                INSERT INTO temp.backstage_order SELECT Z_PK, row_number() OVER (PARTITION BY \
                                \(column) ORDER BY Z_PK) FROM \(table) WHERE \(column) IS NOT NULL AND Z_ENT IN (\(owners));
                                UPDATE \(table) SET \(orderColumn) = (SELECT n FROM temp.backstage_order WHERE pk = \
                                \(table).Z_PK);
                                DROP TABLE temp.backstage_order
                                """)
                    }
                }
            }
            try db.execute(sql: "DROP TABLE IF EXISTS temp.backstage_targets")
        }

        /// Join-table rows reach live rows of both entities: re-pointed where they can be, else dropped.
        func joinTables() throws {
            let bookkeeping: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
            for object in layout.objects where object.kind == .table && !bookkeeping.contains(object.name) {
                guard object.name.hasPrefix("Z_"), try exists(object.name) else { continue }
                let table = object.name.quotedSQLIdentifier
                let keys = try db.columns(in: object.name).map(\.name).filter { !$0.hasPrefix("Z_FOK_") }
                let entityOf: (String) -> Int? = { column in
                    let digits = column.dropFirst(2).prefix { $0.isNumber }
                    return column.hasPrefix("Z_") ? Int(digits) : nil
                }
                let reflexive = keys.compactMap(entityOf).first
                for column in keys {
                    guard let id = entityOf(column) ?? (column == "REFLEXIVE" ? reflexive : nil),
                        let entity = facts.entities.first(where: { $0.id == id })
                    else { continue }
                    let (targets, count) = try targets(entity)
                    if count > 0 {
                        try db.execute(
                            sql: """
                                UPDATE OR IGNORE \(table) SET \(column) = (SELECT pk FROM \(targets) WHERE n = 1 + \
                                abs(\(table).rowid * 7919) % \(count)) WHERE \(column) NOT IN (SELECT pk FROM \(targets))
                                """)
                    }
                    try db.execute(
                        sql: """
                            DELETE FROM \(table) WHERE \(column) IS NULL OR \(column) NOT IN (SELECT pk FROM \(targets))
                            """)
                }
            }
            try db.execute(sql: "DROP TABLE IF EXISTS temp.backstage_targets")
        }

        /// `Z_MAX` of every entity is at least the largest key of its table.
        func primaryKeys() throws {
            guard try exists("Z_PRIMARYKEY") else { return }
            for entity in facts.entities where try exists(entity.table) {
                try db.execute(
                    sql: """
                        UPDATE Z_PRIMARYKEY SET Z_MAX = max(IFNULL(Z_MAX, 0), \
                        (SELECT IFNULL(MAX(Z_PK), 0) FROM \(entity.table.quotedSQLIdentifier))) WHERE Z_ENT = ?
                        """, arguments: [entity.id])
            }
        }
    }
}
