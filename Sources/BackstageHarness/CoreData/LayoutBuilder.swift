import Foundation

/// Works out ``CoreDataStoreLayout``'s statements for one model version.
struct LayoutBuilder {
    struct Numbered {
        var id: Int
        var parentID: Int
        var entity: CoreDataEntity
    }

    private enum Kind: Int, Hashable {
        case integer, toOne, orderKey, numeric, text, blob
    }

    private struct Column {
        var kind: Kind
        var base: String
        var type: String
        /// The entity and property it stores (nil for an entity column or an order key).
        var owner: (entity: String, property: String)?
        /// Set for a to-one key whose destination has sub-entities: that destination's number.
        var entityColumnOf: Int?
        /// For an order key: the owner of the to-one key it goes with.
        var orderKeyOf: (entity: String, property: String)?
        var name = ""
    }

    /// One many-to-many join table: which column holds which side's keys and positions.
    struct JoinTable {
        var table: String
        /// The entity declaring `relationship`, and the column holding its objects' keys.
        var entity: String
        var relationship: String
        var entityKey: String
        /// The entity declaring the inverse, and the column holding its objects' keys.
        var inverseEntity: String
        var inverse: String
        var inverseKey: String
        /// Position of each inverse-side object within `entity.relationship`, when ordered.
        var relationshipOrder: String?
        /// Position of each entity-side object within `inverseEntity.inverse`, when ordered.
        var inverseOrder: String?
        var reflexive: Bool
    }

    let version: CoreDataModelVersion
    var numbered: [Numbered] = []
    var tables: [StoreSchema.Object] = []
    var indexes: [StoreSchema.Object] = []
    var assumptions: [String] = []
    /// The many-to-many join tables, as the migration compiler needs to read and write them.
    var joins: [JoinTable] = []
    private var ids: [String: Int] = [:]
    private var roots: [String: String] = [:]
    private var children: [String: [CoreDataEntity]] = [:]
    /// Entity name → property name → column name.
    private(set) var columnNames: [String: [String: String]] = [:]

    init(version: CoreDataModelVersion) { self.version = version }

    /// Core Data's order of names: without regard to case, then by their characters.
    static func precedes(_ a: String, _ b: String) -> Bool {
        let (x, y) = (a.lowercased(), b.lowercased())
        return x != y ? x < y : a < b
    }

    func tableName(of entity: String) -> String { "Z" + (roots[entity] ?? entity).uppercased() }

    private func entity(_ name: String) -> CoreDataEntity? { version.entity(named: name) }

    private func hasSubentities(_ name: String) -> Bool { !(children[name] ?? []).isEmpty }

    /// The relationship `name` of `entity` or of one of its ancestors.
    private func relationship(_ name: String, of entity: String) -> CoreDataRelationship? {
        guard let found = self.entity(entity) else { return nil }
        return CoreDataModelReader.relationships(of: found, in: version).first { $0.name == name }
    }

    /// The column of property `name` of `entity` (its own or inherited).
    private func column(_ name: String, of entity: String) -> String? {
        var current: String? = entity
        var steps = 0
        while let name0 = current, steps <= version.entities.count {
            if let column = columnNames[name0]?[name] { return column }
            current = self.entity(name0)?.parentEntity
            steps += 1
        }
        return nil
    }

    mutating func build() throws {
        for entity in version.entities {
            if let parent = entity.parentEntity { children[parent, default: []].append(entity) }
        }
        let rootEntities = version.entities.filter { $0.parentEntity == nil }.sorted { Self.precedes($0.name, $1.name) }
        func number(_ entity: CoreDataEntity, parentID: Int, root: String) {
            let id = numbered.count + 1
            numbered.append(Numbered(id: id, parentID: parentID, entity: entity))
            ids[entity.name] = id
            roots[entity.name] = root
            for child in (children[entity.name] ?? []).sorted(by: { Self.precedes($0.name, $1.name) }) {
                number(child, parentID: id, root: root)
            }
        }
        for root in rootEntities { number(root, parentID: 0, root: root.name) }

        for root in rootEntities { try buildTable(root) }
        var joinIndexes: [StoreSchema.Object] = []
        try buildJoinTables(&joinIndexes)
        indexes += joinIndexes
    }

    /// Keeps only `kept`'s tables (and their indexes and join tables): the store of one
    /// configuration, its entities numbered as in the whole model.
    mutating func restrict(to kept: Set<String>) {
        tables = tables.filter { kept.contains($0.name) }
        indexes = indexes.filter { kept.contains($0.table) }
        joins = joins.filter { kept.contains($0.table) }
    }

    private func sqlType(_ attribute: CoreDataAttribute, in entity: String) throws -> (Kind, String) {
        switch attribute.attributeType {
        case .integer16, .integer32, .integer64, .boolean: return (.integer, "INTEGER")
        case .date: return (.numeric, "TIMESTAMP")
        case .double, .float: return (.numeric, "FLOAT")
        case .decimal: return (.numeric, "DECIMAL")
        case .string: return (.text, "VARCHAR")
        case .uri: return (.text, "VARCHAR")
        case .binary, .transformable, .uuid: return (.blob, "BLOB")
        case .objectID, .undefined:
            throw CoreDataSchemaError(
                version: version.name, element: "\(entity).\(attribute.name)",
                reason: .unsupportedAttributeType(attribute.attributeType.rawValue))
        }
    }

    private mutating func buildTable(_ root: CoreDataEntity) throws {
        let table = tableName(of: root.name)
        let members = numbered.filter { roots[$0.entity.name] == root.name }
        var columns: [Column] = []
        for member in members {
            let entity = member.entity
            for attribute in entity.attributes.sorted(by: { Self.precedes($0.name, $1.name) })
            where !attribute.isTransient {
                let (kind, type) = try sqlType(attribute, in: entity.name)
                switch attribute.attributeType {
                case .decimal, .uuid, .uri:
                    note(
                        "\(entity.name).\(attribute.name): a \(attribute.attributeType.rawValue) attribute is taken to be a \(type) column among the \(kind == .numeric ? "dates and floats" : kind == .text ? "strings" : "blobs"); no store here has one"
                    )
                default: break
                }
                columns.append(
                    Column(
                        kind: kind, base: attribute.name.uppercased(), type: type, owner: (entity.name, attribute.name))
                )
            }
            for relationship in entity.relationships.sorted(by: { Self.precedes($0.name, $1.name) })
            where !relationship.isTransient && !relationship.isToMany {
                columns.append(
                    Column(
                        kind: .toOne, base: relationship.name.uppercased(), type: "INTEGER",
                        owner: (entity.name, relationship.name)))
                if hasSubentities(relationship.destinationEntity), let destination = ids[relationship.destinationEntity]
                {
                    columns.append(
                        Column(
                            kind: .toOne, base: relationship.name.uppercased(), type: "INTEGER", owner: nil,
                            entityColumnOf: destination))
                }
                if let inverseName = relationship.inverseName,
                    let inverse = self.relationship(inverseName, of: relationship.destinationEntity),
                    inverse.isToMany, inverse.isOrdered
                {
                    columns.append(
                        Column(
                            kind: .orderKey, base: relationship.name.uppercased(), type: "INTEGER", owner: nil,
                            orderKeyOf: (entity.name, relationship.name)))
                }
            }
            for relationship in entity.relationships where relationship.isToMany && !relationship.isTransient {
                guard relationship.inverseName != nil else {
                    throw CoreDataSchemaError(
                        version: version.name, element: "\(entity.name).\(relationship.name)",
                        reason: .toManyWithoutInverse)
                }
            }
        }
        // Kinds in order, entity by entity within a kind (the array is already in entity order):
        // an entity's integers then its to-one keys, the next entity's integers and keys, ...
        let groups: [Set<Kind>] = [[.integer, .toOne], [.orderKey], [.numeric], [.text], [.blob]]
        let ordered = groups.flatMap { group in columns.filter { group.contains($0.kind) } }
        var taken = Set(["Z_PK", "Z_ENT", "Z_OPT"])
        var named: [Column] = []
        for var column in ordered {
            if let destination = column.entityColumnOf, let key = named.last {
                column.name = "Z\(destination)_" + key.name.dropFirst()
            } else if let keyOwner = column.orderKeyOf, let key = columnNames[keyOwner.entity]?[keyOwner.property] {
                column.name = "Z_FOK_" + key.dropFirst()
                if columns.filter({ $0.kind == .orderKey }).count > 1 {
                    note(
                        "\(table): the order of its Z_FOK_ columns is taken to be their to-one keys' (Photos' store shows another order it does not explain)"
                    )
                }
            } else {
                var name = "Z" + column.base
                var suffix = 1
                while taken.contains(name) {
                    name = "Z\(column.base)\(suffix)"
                    suffix += 1
                }
                column.name = name
            }
            taken.insert(column.name)
            if let owner = column.owner { columnNames[owner.entity, default: [:]][owner.property] = column.name }
            named.append(column)
        }
        let definitions =
            ["Z_PK INTEGER PRIMARY KEY", "Z_ENT INTEGER", "Z_OPT INTEGER"] + named.map { "\($0.name) \($0.type)" }
        tables.append(
            .init(
                kind: .table, name: table, table: table,
                sql: "CREATE TABLE \(table) ( \(definitions.joined(separator: ", ")) )"))

        for column in named where column.kind == .toOne && column.owner != nil {
            indexes.append(
                .init(
                    kind: .index, name: "\(table)_\(column.name)_INDEX", table: table,
                    sql: "CREATE INDEX \(table)_\(column.name)_INDEX ON \(table) (\(column.name))"))
        }
        if members.count > 1 {
            indexes.append(
                .init(
                    kind: .index, name: "\(table)_Z_ENT_INDEX", table: table,
                    sql: "CREATE INDEX \(table)_Z_ENT_INDEX ON \(table) (Z_ENT)"))
        }
        for member in members {
            let entity = member.entity
            for attribute in entity.attributes where attribute.isIndexed && !attribute.isTransient {
                note(
                    "\(entity.name).\(attribute.name): the legacy indexed flag is taken to make Z_\(entity.name)_\(attribute.name), as Photos' store shows"
                )
                try addIndex(
                    "Z_\(entity.name)_\(attribute.name)", unique: false, on: table, entity: entity.name,
                    elements: [.init(property: attribute.name)])
            }
            for fetchIndex in entity.fetchIndexes {
                if fetchIndex.partialIndexExpression != nil {
                    throw CoreDataSchemaError(
                        version: version.name, element: entity.name,
                        reason: .unsupportedFetchIndex("\(fetchIndex.name) is a partial index"))
                }
                if let element = fetchIndex.elements.first(where: { $0.type != "Binary" }) {
                    throw CoreDataSchemaError(
                        version: version.name, element: entity.name,
                        reason: .unsupportedFetchIndex("\(fetchIndex.name) has a \(element.type) element"))
                }
                try addIndex(
                    "Z_\(entity.name)_\(fetchIndex.name)", unique: false, on: table, entity: entity.name,
                    elements: fetchIndex.elements)
            }
            for constraint in entity.uniquenessConstraints {
                if constraint.count > 1 {
                    note(
                        "\(entity.name): a uniqueness constraint on several properties is taken to be named Z_\(entity.name)_UNIQUE_\(constraint.joined(separator: "_")); stores here show single ones only"
                    )
                }
                try addIndex(
                    "Z_\(entity.name)_UNIQUE_\(constraint.joined(separator: "_"))", unique: true, on: table,
                    entity: entity.name, elements: constraint.map { .init(property: $0) })
            }
        }
    }

    private mutating func addIndex(
        _ name: String, unique: Bool, on table: String, entity: String, elements: [CoreDataFetchIndex.Element]
    ) throws {
        let parts = try elements.map { element -> String in
            guard let column = column(element.property, of: entity) else {
                throw CoreDataSchemaError(
                    version: version.name, element: entity, reason: .unknownProperty(element.property))
            }
            return "\(column) COLLATE BINARY \(element.isAscending ? "ASC" : "DESC")"
        }
        indexes.append(
            .init(
                kind: .index, name: name, table: table,
                sql: "CREATE \(unique ? "UNIQUE " : "")INDEX \(name) ON \(table) (\(parts.joined(separator: ", ")))"))
    }

    private mutating func note(_ sentence: String) {
        if !assumptions.contains(sentence) { assumptions.append(sentence) }
    }

    /// One join table per many-to-many pair, in entity order.
    private mutating func buildJoinTables(_ joinIndexes: inout [StoreSchema.Object]) throws {
        var done = Set<String>()
        var taken = Set<String>()
        func unique(_ name: String) -> String {
            var result = name
            var suffix = 1
            while taken.contains(result) {
                result = "\(name)\(suffix)"
                suffix += 1
            }
            if result != name {
                assumptions.append(
                    "join column \(result): two many-to-many relationships give \(name); which one gets the number is not proven"
                )
            }
            taken.insert(result)
            return result
        }
        for member in numbered {
            let entity = member.entity
            for relationship in entity.relationships.sorted(by: { Self.precedes($0.name, $1.name) })
            where relationship.isToMany && !relationship.isTransient {
                guard let inverseName = relationship.inverseName,
                    let inverse = self.relationship(inverseName, of: relationship.destinationEntity), inverse.isToMany
                else { continue }
                let inverseOwner = owner(of: inverseName, from: relationship.destinationEntity)
                let key = [entity.name + "." + relationship.name, inverseOwner + "." + inverseName].sorted().joined(
                    separator: "|")
                guard done.insert(key).inserted, let a = ids[entity.name], let b = ids[inverseOwner] else { continue }
                let reflexive = inverseOwner == entity.name && inverseName == relationship.name
                let table: String
                var columns: [String]
                var orderKeys: [String] = []
                var (keyA, keyB) = ("", "")
                if reflexive {
                    let column = unique("Z_\(a)" + relationship.name.uppercased())
                    table = "Z_\(a)" + relationship.name.uppercased()
                    columns = [column, "REFLEXIVE"]
                    if relationship.isOrdered {
                        note(
                            "\(entity.name).\(relationship.name): an ordered reflexive relationship's order column is not known; none is written"
                        )
                    }
                } else {
                    let columnA = unique("Z_\(a)" + inverseName.uppercased())
                    let columnB = unique("Z_\(b)" + relationship.name.uppercased())
                    (keyA, keyB) = (columnA, columnB)
                    let aFirst = columnA < columnB
                    table = aFirst ? "Z_\(a)" + relationship.name.uppercased() : "Z_\(b)" + inverseName.uppercased()
                    columns = aFirst ? [columnA, columnB] : [columnB, columnA]
                    for column in columns {
                        // An ordered side keeps the position of each object it reaches.
                        let ordered = column == columnB ? relationship.isOrdered : inverse.isOrdered
                        if ordered { orderKeys.append("Z_FOK_" + column.dropFirst(2)) }
                    }
                    if relationship.isOrdered && inverse.isOrdered {
                        note(
                            "\(table): both sides ordered: two Z_FOK_ columns are taken to follow the key columns' order"
                        )
                    }
                }
                if reflexive { (keyA, keyB) = (columns[0], columns[1]) }
                joins.append(
                    JoinTable(
                        table: table, entity: entity.name, relationship: relationship.name, entityKey: keyA,
                        inverseEntity: inverseOwner, inverse: inverseName, inverseKey: keyB,
                        relationshipOrder: !reflexive && relationship.isOrdered ? "Z_FOK_" + keyB.dropFirst(2) : nil,
                        inverseOrder: !reflexive && inverse.isOrdered ? "Z_FOK_" + keyA.dropFirst(2) : nil,
                        reflexive: reflexive))
                let definitions = (columns + orderKeys).map { "\($0) INTEGER" }
                tables.append(
                    .init(
                        kind: .table, name: table, table: table,
                        sql:
                            "CREATE TABLE \(table) ( \(definitions.joined(separator: ", ")), PRIMARY KEY (\(columns.joined(separator: ", "))) )"
                    ))
                let index = "\(table)_\(columns[1])_INDEX"
                joinIndexes.append(
                    .init(
                        kind: .index, name: index, table: table,
                        sql: "CREATE INDEX \(index) ON \(table) (\(columns[1]), \(columns[0]))"))
            }
        }
    }

    /// The entity declaring relationship `name`: `entity` or the ancestor it inherits it from.
    private func owner(of name: String, from entity: String) -> String {
        var current: String? = entity
        var steps = 0
        while let candidate = current, steps <= version.entities.count {
            if self.entity(candidate)?.relationships.contains(where: { $0.name == name }) == true { return candidate }
            current = self.entity(candidate)?.parentEntity
            steps += 1
        }
        return entity
    }
}
