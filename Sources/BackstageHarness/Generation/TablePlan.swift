import BackstageFixtures
import Foundation
import GRDB

/// A declared foreign key: its columns take, together, the key of a real parent row.
final class ReferencePlan {
    let parent: String
    let columns: [String]
    /// Rows' values of the referenced columns, one tuple per parent row.
    var tuples: [[DatabaseValue]]
    /// For a table that references itself: where in its own row the referenced values are.
    let ownColumns: [Int]?
    /// Any of its columns may be NULL (a NULL anywhere makes the key match nothing, legitimately).
    let nullable: Bool

    init(parent: String, columns: [String], tuples: [[DatabaseValue]], ownColumns: [Int]?, nullable: Bool) {
        self.parent = parent
        self.columns = columns
        self.tuples = tuples
        self.ownColumns = ownColumns
        self.nullable = nullable
    }
}

/// How one table's rows are made so that every constraint holds by construction: its columns'
/// plans; its foreign keys filled as tuples from real parent rows; for each `UNIQUE` group
/// (primary key, `UNIQUE` constraint, unique index, partial or not, created before or after the
/// data) one column whose values differ row to row, or — when every column of the group is a
/// reference or a list of allowed values — the group's combinations enumerated, which caps the
/// table's rows at their number; and its `CHECK` constraints, for repairs and errors.
struct TablePlan {
    var columns: [ColumnPlan]
    var references: [ReferencePlan]
    /// Sizes of the enumerated parts: a reference (its index in `references`) or a column with a
    /// list of values (its index in `columns`).
    var enumeration: [(part: Part, size: Int)]
    var checks: [CheckConstraint]

    enum Part { case reference(Int), column(Int) }

    /// How many distinct rows the enumeration allows (nil: no limit).
    var capacity: Int? {
        guard !enumeration.isEmpty else { return nil }
        return enumeration.reduce(1) { total, part in total.multipliedReportingOverflow(by: max(part.size, 0)).overflow ? Int.max : total * part.size }
    }

    /// The index each enumerated part takes in row `index` (0-based): mixed radix, each digit
    /// shifted by the ones before so that neighbouring rows differ in more than the last part.
    func choices(for index: Int) -> [Int] {
        var rest = index, shift = 0
        return enumeration.map { part in
            let size = max(part.size, 1)
            let digit = rest % size
            rest /= size
            defer { shift += digit }
            return (digit + shift) % size
        }
    }
}

extension SchemaGenerator {
    /// The plan of `table` in the database being generated (its parents already filled).
    func tablePlan(_ table: String, in db: Database) throws -> TablePlan {
        let columns = try Row.fetchAll(db, sql: "SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?)", arguments: [table])
        let object = schema.objects.first { $0.name == table }
        let isTable = object?.kind == .table
        let names = columns.filter { ($0["hidden"] as Int) == 0 }.map { $0["name"] as String }
        let parsed = isTable ? CheckParser.parse(object?.sql ?? "", columns: names) : ([], [:])
        let keys = columns.filter { ($0["pk"] as Int) > 0 }
        let rowidAlias = keys.count == 1 && (keys[0]["type"] as String? ?? "").uppercased() == "INTEGER" && object?.withoutRowID != true && isTable
        let references = isTable ? try referencePlans(table, names: names, columns: columns, in: db) : []
        let referenced = Dictionary(references.enumerated().flatMap { group, reference in
            reference.columns.enumerated().map { ($0.element.lowercased(), (group, $0.offset)) } }, uniquingKeysWith: { first, _ in first })
        let statistics = schema.tables[table].flatMap { $0.rows > 0 ? $0.columns : nil } ?? []
        let entities = schema.coreData?.entities.filter { $0.table == table }.map(\.id) ?? []
        let strict = (object?.sql ?? "").uppercased().range(of: #"\)\s*(WITHOUT\s+ROWID\s*,\s*)?STRICT"#, options: .regularExpression) != nil
        var plans: [ColumnPlan] = []
        for column in columns where (column["hidden"] as Int) == 0 {
            let name: String = column["name"], declared: String = column["type"] ?? ""
            let affinity = strict ? ColumnPlan.strictAffinity(of: declared) : ColumnPlan.affinity(of: declared)
            let stats = statistics.first { $0.name == name } ?? ColumnPlan.defaultStatistics(name: name, declared: declared, affinity: affinity)
            let role: ColumnPlan.Role
            let link = referenced[name.lowercased()]
            if let link {
                role = .reference(parentRows: references[link.0].tuples.count)
            } else if rowidAlias && (column["pk"] as Int) > 0 {
                role = .rowNumber
            } else if name == "Z_ENT" && !entities.isEmpty {
                role = .entity(entities)
            } else if name == "Z_OPT" && schema.coreData != nil {
                role = .version
            } else {
                role = .statistics(unique: false)
            }
            // A NULL rowid alias is given a new rowid by SQLite: no NULL for it, nor for a WITHOUT ROWID key.
            let key = (column["pk"] as Int) > 0 && (rowidAlias || object?.withoutRowID == true)
            var plan = ColumnPlan(name: name, role: role, notNull: (column["notnull"] as Int) == 1 || key,
                                  statistics: stats, affinity: affinity)
            plan.link = link
            plan.domain = parsed.1[name.lowercased()]
            if plan.domain?.notNull == true { plan.notNull = true }
            plans.append(plan)
        }
        var tablePlan = TablePlan(columns: plans, references: references, enumeration: [], checks: parsed.0)
        if isTable { try planUniqueness(&tablePlan, table: table, keyColumns: keys.map { $0["name"] as String }, rowidAlias: rowidAlias, in: db) }
        return tablePlan
    }

    /// Each declared foreign key with the tuples of its parent's rows.
    private func referencePlans(_ table: String, names: [String], columns: [Row], in db: Database) throws -> [ReferencePlan] {
        let rows = try Row.fetchAll(db, sql: "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq", arguments: [table])
        var grouped: [(parent: String, from: [String], to: [String?])] = []
        var ids: [Int] = []
        for row in rows {
            let id: Int = row["id"]
            if ids.last != id { ids.append(id); grouped.append((row["table"], [], [])) }
            grouped[grouped.count - 1].from.append(row["from"])
            grouped[grouped.count - 1].to.append(row["to"])
        }
        var plans: [ReferencePlan] = []
        for group in grouped {
            guard let parent = try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", arguments: [group.parent]) else { continue }
            var to = group.to.compactMap { $0 }
            if to.count != group.from.count {
                to = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", arguments: [parent])
                if to.isEmpty { to = ["rowid"] }
            }
            guard to.count == group.from.count else { continue }
            let selfReference = parent.lowercased() == table.lowercased()
            let tuples = try Row.fetchAll(db, sql: "SELECT \(to.map(\.quotedSQLIdentifier).joined(separator: ", ")) FROM \(parent.quotedSQLIdentifier) WHERE \(to.map { "\($0.quotedSQLIdentifier) IS NOT NULL" }.joined(separator: " AND "))").map { Array($0.databaseValues) }
            let own = selfReference ? to.map { column in names.firstIndex { $0.lowercased() == column.lowercased() } ?? -1 } : nil
            let nullable = group.from.contains { from in columns.first { ($0["name"] as String).lowercased() == from.lowercased() }.map { ($0["notnull"] as Int) == 0 } ?? true }
            plans.append(ReferencePlan(parent: parent, columns: group.from, tuples: tuples, ownColumns: own, nullable: nullable))
        }
        return plans
    }

    /// Makes every `UNIQUE` group of the table distinct row to row.
    private func planUniqueness(_ plan: inout TablePlan, table: String, keyColumns: [String], rowidAlias: Bool, in db: Database) throws {
        var groups: [[String]] = []
        // A rowid alias counts rows by itself, unless it is a foreign key (`totals(athleteId
        // INTEGER PRIMARY KEY REFERENCES athlete)`): then each parent at most once.
        if !keyColumns.isEmpty && (!rowidAlias || plan.columns.contains { $0.link != nil && keyColumns.contains($0.name) }) {
            groups.append(keyColumns)
        }
        for index in try Row.fetchAll(db, sql: "SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1", arguments: [table]) {
            groups.append(try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?) WHERE name IS NOT NULL", arguments: [index["name"] as String]))
        }
        let names = plan.columns.map { $0.name.lowercased() }
        // Unique indexes made after the rows go in: from their statements.
        for index in schema.objects where index.kind == .index && index.table.lowercased() == table.lowercased()
            && index.sql.range(of: #"^\s*CREATE\s+UNIQUE"#, options: [.regularExpression, .caseInsensitive]) != nil {
            let words = SQLTokens.indexTerms(inCreateIndex: index.sql).flatMap { SQLTokens.tokens($0) }
            groups.append(words.compactMap { if case .word(let w) = $0, names.contains(w) { w } else { nil } })
        }
        var enumerated: Set<String> = []
        for group in groups.map({ Set($0.map { $0.lowercased() }) }) where !group.isEmpty {
            let members = plan.columns.indices.filter { group.contains(names[$0]) }
            if members.contains(where: { plan.columns[$0].distinct || plan.columns[$0].isRowNumber }) { continue }
            if let free = members.first(where: { plan.columns[$0].link == nil && plan.columns[$0].domain?.isFinite != true && plan.columns[$0].isFree }) {
                plan.columns[free].distinct = true
                continue
            }
            for member in members {
                if let link = plan.columns[member].link {
                    guard !enumerated.contains("r\(link.0)") else { continue }
                    enumerated.insert("r\(link.0)")
                    plan.enumeration.append((.reference(link.0), plan.references[link.0].tuples.count))
                } else if let values = plan.columns[member].domain?.values, !enumerated.contains("c\(member)") {
                    enumerated.insert("c\(member)")
                    plan.enumeration.append((.column(member), values.count))
                }
            }
        }
    }
}
