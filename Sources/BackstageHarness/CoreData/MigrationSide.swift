import Backstage
import Foundation

/// One model version's store as the migration compiler reads it: entity numbers, tables, the column
/// of each stored property, join tables.
struct MigrationSide {
    /// What a column of an entity table stores.
    enum Role: Hashable {
        case attribute(entity: String, property: String)
        case toOne(entity: String, relationship: String)
        /// `Z<n>_NAME`: the entity number of the object a to-one key reaches.
        case entityOf(entity: String, relationship: String)
        /// `Z_FOK_NAME`: the position of the row within the ordered to-many inverse of a to-one.
        case order(entity: String, relationship: String)
    }

    let version: CoreDataModelVersion
    let builder: LayoutBuilder
    /// Table → its columns after `Z_PK, Z_ENT, Z_OPT`, in order.
    let columns: [String: [String]]
    /// Table → column → what it stores.
    let roles: [String: [String: Role]]

    /// The side of `version`'s store; with `tables`, of the store of one of its configurations,
    /// which holds those tables only (and Core Data's own), its entities numbered as in the model.
    init(_ version: CoreDataModelVersion, tables: Set<String>? = nil) throws {
        self.version = version
        var builder = LayoutBuilder(version: version)
        do { try builder.build() } catch let error as CoreDataSchemaError {
            throw CoreDataMigrationError(reason: .schema(error))
        }
        if let tables { builder.restrict(to: tables) }
        self.builder = builder
        var columns: [String: [String]] = [:]
        for table in builder.tables {
            columns[table.name] = CoreDataStoreLayout.columns(of: table.sql).map(\.name).filter {
                !["Z_PK", "Z_ENT", "Z_OPT"].contains($0)
            }
        }
        self.columns = columns
        var roles: [String: [String: Role]] = [:]
        for (entity, properties) in builder.columnNames {
            let table = builder.tableName(of: entity)
            for (property, column) in properties {
                let isRelationship =
                    version.entity(named: entity)?.relationships.contains { $0.name == property } ?? false
                guard isRelationship else {
                    roles[table, default: [:]][column] = .attribute(entity: entity, property: property)
                    continue
                }
                roles[table, default: [:]][column] = .toOne(entity: entity, relationship: property)
                let present = Set(columns[table] ?? [])
                let order = "Z_FOK_" + column.dropFirst()
                if present.contains(order) {
                    roles[table, default: [:]][order] = .order(entity: entity, relationship: property)
                }
                if let target = version.entity(named: entity)?.relationships.first(where: { $0.name == property })?
                    .destinationEntity,
                    let id = builder.numbered.first(where: { $0.entity.name == target })?.id,
                    present.contains("Z\(id)_" + column.dropFirst())
                {
                    roles[table, default: [:]]["Z\(id)_" + column.dropFirst()] =
                        .entityOf(entity: entity, relationship: property)
                }
            }
        }
        self.roles = roles
    }

    /// What a store of this version holds to be told from another version's: entity numbers and
    /// every entity and join table's columns.
    var signature: CoreDataMigrationProgram.StoreSignature {
        CoreDataMigrationProgram.StoreSignature(
            entities: Dictionary(
                builder.numbered.map { ($0.entity.name, $0.id) }, uniquingKeysWith: { first, _ in first }),
            tables: Dictionary(
                builder.tables.map { ($0.name, CoreDataStoreLayout.columns(of: $0.sql).map(\.name)) },
                uniquingKeysWith: { first, _ in first }))
    }

    func id(_ entity: String) -> Int? { builder.numbered.first { $0.entity.name == entity }?.id }

    func table(_ entity: String) -> String { builder.tableName(of: entity) }

    /// The entity tables (one per root entity).
    var entityTables: [String] {
        let joins = Set(builder.joins.map(\.table))
        return builder.tables.map(\.name).filter { !joins.contains($0) }
    }

    /// `entity` and its ancestors, nearest first.
    func lineage(_ entity: String) -> [String] { InferredMigration.lineage(of: entity, in: version).map(\.name) }

    /// The entities whose rows live in `table`, with their numbers.
    func entities(in table: String) -> [(name: String, id: Int)] {
        builder.numbered.filter { self.table($0.entity.name) == table }.map { ($0.entity.name, $0.id) }
    }

    /// The column of property `name` of `entity`, its own or inherited.
    func column(_ name: String, of entity: String) -> String? {
        for owner in lineage(entity) {
            if let column = builder.columnNames[owner]?[name] { return column }
        }
        return nil
    }

    func attribute(_ name: String, of entity: String) -> CoreDataAttribute? {
        guard let found = version.entity(named: entity),
            case .attribute(let attribute)? = InferredMigration.properties(of: found, in: version)[name]
        else { return nil }
        return attribute
    }

    func relationship(_ name: String, of entity: String) -> CoreDataRelationship? {
        guard let found = version.entity(named: entity),
            case .relationship(let relationship)? = InferredMigration.properties(of: found, in: version)[name]
        else { return nil }
        return relationship
    }

    /// The `Z_FOK_` column of a to-one whose inverse is an ordered to-many.
    func orderColumn(_ relationship: String, of entity: String) -> String? {
        guard let key = column(relationship, of: entity) else { return nil }
        let candidate = "Z_FOK_" + key.dropFirst()
        return columns[table(entity)]?.contains(candidate) == true ? candidate : nil
    }

    /// The `Z<n>_` column naming the entity a to-one key reaches, when its destination has sub-entities.
    func entityColumn(_ relationship: String, of entity: String) -> String? {
        let role = Role.entityOf(entity: owner(relationship, of: entity), relationship: relationship)
        return roles[table(entity)]?.first { $0.value == role }?.key
    }

    /// The entity of `entity`'s lineage that declares property `name`.
    func owner(_ name: String, of entity: String) -> String {
        lineage(entity).first { builder.columnNames[$0]?[name] != nil } ?? entity
    }

    /// The join table of many-to-many `relationship` of `entity`, and whether `entity` is its entity side.
    func join(_ relationship: String, of entity: String) -> (table: LayoutBuilder.JoinTable, entitySide: Bool)? {
        let lineage = Set(lineage(entity))
        for join in builder.joins {
            if join.relationship == relationship, lineage.contains(join.entity) { return (join, true) }
            if join.inverse == relationship, lineage.contains(join.inverseEntity) { return (join, false) }
        }
        return nil
    }

    func hasSubentities(_ entity: String) -> Bool { version.entities.contains { $0.parentEntity == entity } }
}
