import Backstage
import Foundation
import GRDB
import GRDBSQLite

/// A declared foreign key: its columns take, together, the key of a real parent row.
final class ReferencePlan {
    let parent: String
    let columns: [String]
    /// Rows' values of the referenced columns, one tuple per parent row, end to end: one array,
    /// not one per parent row (a row's key taken from a random one touched a random heap object,
    /// a twentieth of a generation in cache misses on its reference count).
    private(set) var values: [DatabaseValue]
    /// Values per tuple: the key's columns.
    let width: Int
    /// Parent rows (tuples) there are to take a key from.
    var count: Int { values.count / width }
    /// For a table that references itself: where in its own row the referenced values are.
    let ownColumns: [Int]?
    /// Any of its columns may be NULL (a NULL anywhere makes the key match nothing, legitimately).
    let nullable: Bool
    /// Where its columns are in the table's row (-1: not a column the generator writes).
    var indices: [Int] = []
    /// Its place among the table's enumerated parts, when it is one.
    var enumerated: Int?
    /// How often it is NULL (its first column's captured share).
    var nullShare = 0.1
    /// Every key it is given names a parent row by construction: a declared key, to the parent's
    /// primary key or a unique index, of the same affinity, a self-reference only to keys the
    /// repair of a row never changes. False: `PRAGMA foreign_key_check` must look.
    var sound = false
    /// A row kept a drawn value in one of its NOT NULL columns (no parent row to take a key from).
    var madeUp = false
    /// The trigger that demands a parent row meeting a condition (none other will do), when one does.
    var demanded: TriggerReference?

    init(parent: String, columns: [String], values: [DatabaseValue], ownColumns: [Int]?, nullable: Bool) {
        self.parent = parent
        self.columns = columns
        self.width = max(columns.count, 1)
        self.values = values
        self.ownColumns = ownColumns
        self.nullable = nullable
    }

    /// Tuple `index`'s values.
    func tuple(_ index: Int) -> ArraySlice<DatabaseValue> { values[(index * width)..<(index * width + width)] }

    /// Positions of its columns that a reference before it in the row's making chose already (two
    /// composite keys sharing a column: `(userId, tagId)` and `(userId, listId)`): its tuple is one
    /// agreeing with them.
    var shared: [Int] = []
    /// The tuples by their values at ``shared``, made when first asked.
    private var lookup: [[DatabaseValue]: [Int]]?

    /// The tuples whose values at ``shared`` are `key`.
    func matching(_ key: [DatabaseValue]) -> [Int] {
        if lookup == nil {
            var made: [[DatabaseValue]: [Int]] = [:]
            for index in 0..<count { made[shared.map { values[index * width + $0] }, default: []].append(index) }
            lookup = made
        }
        return lookup?[key] ?? []
    }

    /// A row of the table itself went in (a self-reference): its key, `values` at ``ownColumns``,
    /// becomes a parent's (unless part of it is NULL).
    func appendKey(of row: [DatabaseValue], number: Int) {
        guard let ownColumns else { return }
        let key = ownColumns.map { $0 >= 0 ? row[$0] : number.databaseValue }
        if !key.contains(where: \.isNull) {
            values += key
            lookup = nil
        }
    }

    /// Only the first `count` tuples kept (the rows after them did not go in).
    func truncate(to count: Int) {
        values.removeLast(values.count - count * width)
        lookup = nil
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
    /// Every declared foreign key has a ``ReferencePlan`` (none was left out as unreadable).
    var keysPlanned = true
    /// The order in which a row's references are chosen when some share a column (enumerated
    /// ones first, their tuples fixed); nil when none does.
    var sharingOrder: [Int]?

    /// Whether each row's foreign keys name real parent rows by construction.
    var keysHold: Bool { keysPlanned && references.allSatisfy { $0.sound && !$0.madeUp } }

    enum Part { case reference(Int), column(Int) }

    /// How many distinct rows the enumeration allows (nil: no limit).
    var capacity: Int? {
        guard !enumeration.isEmpty else { return nil }
        return enumeration.reduce(1) { total, part in
            total.multipliedReportingOverflow(by: max(part.size, 0)).overflow ? Int.max : total * part.size
        }
    }

    /// The index each enumerated part takes in row `index` (0-based): mixed radix, each digit
    /// shifted by the ones before so that neighbouring rows differ in more than the last part.
    func choices(for index: Int) -> [Int] {
        var rest = index, shift = 0
        return enumeration.enumerated().map { position, part in
            let size = max(part.size, 1)
            let digit = rest % size
            rest /= size
            defer { shift += digit }
            return (digit + shift + (position > 0 ? offset : 0)) % size
        }
    }

    /// Added to every enumerated part but the first: 1 where a `CHECK` compares two enumerated
    /// keys (`containing_id != sub_id`, both keys of one parent), whose first rows would otherwise
    /// all pair a parent with itself; the pairs of a parent with itself then come last.
    var offset = 0
}

extension SchemaGenerator {
    /// The plan of `table` in the database being generated (its parents already filled).
    func tablePlan(_ table: String, in db: Database) throws -> TablePlan {
        let columns = try Row.fetchAll(
            db, sql: "SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?)", arguments: [table])
        let object = schema.objects.first { $0.name == table }
        let isTable = object?.kind == .table
        let names = columns.filter { ($0["hidden"] as Int) == 0 }.map { $0["name"] as String }
        let parsed = isTable ? CheckParser.parse(object?.sql ?? "", columns: names) : ([], [:])
        let keys = columns.filter { ($0["pk"] as Int) > 0 }
        let rowidAlias =
            keys.count == 1 && (keys[0]["type"] as String? ?? "").uppercased() == "INTEGER"
            && object?.withoutRowID != true && isTable
        var keysPlanned = true
        let references =
            isTable ? try referencePlans(table, names: names, columns: columns, planned: &keysPlanned, in: db) : []
        let referenced = Dictionary(
            references.enumerated().flatMap { group, reference in
                reference.columns.enumerated().map { ($0.element.lowercased(), (group, $0.offset)) }
            }, uniquingKeysWith: { first, _ in first })
        let statistics = schema.tables[table].flatMap { $0.rows > 0 ? $0.columns : nil } ?? []
        let entities = schema.coreData?.entities.filter { $0.table == table }.map(\.id) ?? []
        let strict =
            (object?.sql ?? "").uppercased().range(
                of: #"\)\s*(WITHOUT\s+ROWID\s*,\s*)?STRICT"#, options: .regularExpression) != nil
        let json = isTable ? jsonColumns(of: table, names: names) : []
        var plans: [ColumnPlan] = []
        for column in columns where (column["hidden"] as Int) == 0 {
            let name: String = column["name"], declared: String = column["type"] ?? ""
            let affinity = strict ? ColumnPlan.strictAffinity(of: declared) : ColumnPlan.affinity(of: declared)
            let stats =
                statistics.first { $0.name == name }
                ?? ColumnPlan.defaultStatistics(name: name, declared: declared, affinity: affinity)
            let role: ColumnPlan.Role
            let link = referenced[name.lowercased()]
            if let link {
                role = .reference(parentRows: references[link.0].count)
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
            let plan = ColumnPlan(
                name: name, role: role, notNull: (column["notnull"] as Int) == 1 || key,
                statistics: stats, affinity: affinity)
            plan.link = link
            plan.domain = parsed.1[name.lowercased()]
            // Core Data's dates are REAL seconds since 2001, drawn as reals already.
            plan.dateLike =
                plan.isFree && schema.coreData == nil && ColumnPlan.isDateLike(name: name, declared: declared)
            plan.declaredDate = ColumnPlan.declaresDate(declared)
            if json.contains(name.lowercased()) && plan.isFree {
                var domain = plan.domain ?? ColumnDomain()
                domain.json = true
                plan.domain = domain
            }
            if plan.domain?.notNull == true { plan.notNull = true }
            plans.append(plan)
        }
        var tablePlan = TablePlan(columns: plans, references: references, enumeration: [], checks: parsed.0)
        tablePlan.keysPlanned = keysPlanned
        if isTable {
            try planUniqueness(
                &tablePlan, table: table, keyColumns: keys.map { $0["name"] as String }, rowidAlias: rowidAlias, in: db)
        }
        // Looked up once here, not for every row.
        let ownKeys = Set(references.flatMap { $0.ownColumns ?? [] })
        for index in tablePlan.columns.indices where tablePlan.columns[index].isFree {
            tablePlan.columns[index].edgeValues = EdgeValues.admissible(tablePlan.columns[index])
            tablePlan.columns[index].boundInPlace = tablePlan.columns[index].domain == nil && !ownKeys.contains(index)
        }
        for (group, reference) in references.enumerated() {
            reference.indices = reference.columns.map { column in
                plans.firstIndex { $0.name.lowercased() == column.lowercased() } ?? -1
            }
            reference.enumerated = tablePlan.enumeration.firstIndex {
                if case .reference(group) = $0.part { true } else { false }
            }
            reference.nullShare =
                reference.indices.first.flatMap { $0 >= 0 ? plans[$0].statistics.nullFraction : nil } ?? 0.1
            // A column it does not write, or a self-reference to a value a repair may redraw: unsure.
            if reference.indices.contains(-1)
                || (reference.ownColumns ?? []).contains(where: { $0 < 0 || !plans[$0].isRowNumber })
            {
                reference.sound = false
            }
        }
        planSharing(&tablePlan)
        for check in tablePlan.checks {
            let keys = Set(
                check.columns.compactMap { column in
                    tablePlan.columns.first { $0.name.lowercased() == column }?.link.flatMap {
                        tablePlan.references[$0.0].enumerated
                    }
                })
            if keys.count > 1 { tablePlan.offset = 1 }
        }
        return tablePlan
    }

    /// References sharing a column (two composite keys, a key and a trigger's copy) are chosen in
    /// turn, each agreeing with those before it on what they share: the enumerated ones first,
    /// then always the one sharing most with those chosen (a collection's library, then an item
    /// of that library).
    private func planSharing(_ plan: inout TablePlan) {
        let references = plan.references
        var order = references.indices.filter { references[$0].enumerated != nil }
        var left = references.indices.filter { references[$0].enumerated == nil }
        var seen: Set<String> = [], sharing = false
        for group in order { seen.formUnion(references[group].columns.map { $0.lowercased() }) }
        for group in order { references[group].shared = [] }
        while !left.isEmpty {
            guard
                let best = left.max(by: { a, b in
                    let (x, y) = (
                        references[a].columns.filter { seen.contains($0.lowercased()) }.count,
                        references[b].columns.filter { seen.contains($0.lowercased()) }.count
                    )
                    return x != y ? x < y : a > b
                })
            else { break }
            left.removeAll { $0 == best }
            order.append(best)
            let names = references[best].columns.map { $0.lowercased() }
            references[best].shared = names.indices.filter { seen.contains(names[$0]) }
            if !references[best].shared.isEmpty { sharing = true }
            seen.formUnion(names)
        }
        plan.sharingOrder = sharing ? order : nil
    }

    /// For each reference, the smallest index of the references tied to it by shared columns.
    static func ties(of references: [ReferencePlan]) -> [Int] {
        var root = Array(references.indices)
        func find(_ x: Int) -> Int { root[x] == x ? x : find(root[x]) }
        for a in references.indices {
            for b in references.indices where b > a {
                let shared = Set(references[a].columns.map { $0.lowercased() })
                if references[b].columns.contains(where: { shared.contains($0.lowercased()) }) {
                    let (x, y) = (find(a), find(b))
                    root[max(x, y)] = min(x, y)
                }
            }
        }
        return references.indices.map(find)
    }

    /// Each declared foreign key with the tuples of its parent's rows.
    private func referencePlans(
        _ table: String, names: [String], columns: [Row], planned: inout Bool, in db: Database
    ) throws -> [ReferencePlan] {
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            arguments: [table])
        // A condition a trigger puts on the parent row: only rows meeting it are taken.
        var grouped: [(parent: String, from: [String], to: [String?], condition: TriggerReference?)] = []
        var ids: [Int] = []
        for row in rows {
            let id: Int = row["id"]
            if ids.last != id { ids.append(id); grouped.append((row["table"], [], [], nil)) }
            grouped[grouped.count - 1].from.append(row["from"])
            grouped[grouped.count - 1].to.append(row["to"])
        }
        let declaredCount = grouped.count
        let declared = Set(grouped.flatMap(\.from).map { $0.lowercased() })
        for implicit in triggerReferences(of: table) {
            let column = implicit.column.lowercased()
            if let at = grouped.firstIndex(where: {
                $0.from.map { $0.lowercased() } == [column] && $0.parent.lowercased() == implicit.parent.lowercased()
            }) {
                if implicit.condition != nil && grouped[at].condition == nil { grouped[at].condition = implicit }
            } else if !declared.contains(column) && names.contains(where: { $0.lowercased() == column }) {
                grouped.append((implicit.parent, [implicit.column], [implicit.parentColumn], implicit))
            }
        }
        // What a trigger's RAISE says the row copies from another table's row.
        for copy in triggerCopies(of: table)
        where copy.columns.allSatisfy({ column in
            column.hasPrefix(TriggerCopy.virtualMark) || names.contains { $0.lowercased() == column.lowercased() }
        }) {
            grouped.append((copy.parent, copy.columns, copy.parentColumns, nil))
        }
        var plans: [ReferencePlan] = []
        for (number, group) in grouped.enumerated() {
            planned = planned && number < declaredCount  // (the others: only the triggers enforce them)
            guard
                let parent = try String.fetchOne(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                    arguments: [group.parent])
            else {
                planned = false
                continue
            }
            var to = group.to.compactMap { $0 }
            if to.count != group.from.count {
                to = try String.fetchAll(
                    db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", arguments: [parent])
                if to.isEmpty { to = ["rowid"] }
            }
            guard to.count == group.from.count else {
                planned = false
                continue
            }
            let selfReference = parent.lowercased() == table.lowercased()
            let condition = group.condition?.condition
            let (tuples, keysWhole) = try parentTuples(
                parent, columns: to, meeting: condition, alias: group.condition?.alias, in: db)
            // (A self-reference with a condition takes only the rows already there that meet it.)
            let own =
                selfReference && condition == nil
                ? to.map { column in names.firstIndex { $0.lowercased() == column.lowercased() } ?? -1 } : nil
            let nullable = group.from.contains { from in
                !from.hasPrefix(TriggerCopy.virtualMark)
                    && columns.first { ($0["name"] as String).lowercased() == from.lowercased() }.map {
                        ($0["notnull"] as Int) == 0
                    } ?? true
            }
            let plan = ReferencePlan(
                parent: parent, columns: group.from, values: tuples, ownColumns: own, nullable: nullable)
            if group.condition?.required == true { plan.demanded = group.condition }
            plan.sound =
                try number < declaredCount && keyIsUnique(parent, columns: to, in: db)
                && sameAffinity(table, group.from, parent, to, in: db) && keysWhole
            plans.append(plan)
        }
        return plans
    }

    /// The parent rows' values of `columns` (none NULL), end to end, stepped directly: a `Row`
    /// per parent row and its values copied out of it were half of planning chinook's tables.
    /// Text is read whole, a NUL in it too (an edge value: read up to the NUL, it named no parent
    /// row, and `foreign_key_check` then scanned the whole store for it). And whether every key
    /// was read as it is: text that is not UTF-8 reads as another text.
    /// With `condition` (SQL naming the parent `alias`), only the rows meeting it; a condition
    /// SQLite cannot read here (a function only the app has) is left out.
    private func parentTuples(
        _ parent: String, columns: [String], meeting condition: String? = nil, alias: String? = nil, in db: Database
    ) throws -> (tuples: [DatabaseValue], whole: Bool) {
        let names = columns.map(\.quotedSQLIdentifier)
        let source = parent.quotedSQLIdentifier + (alias.map { " AS \($0.quotedSQLIdentifier)" } ?? "")
        let sql =
            "SELECT \(names.joined(separator: ", ")) FROM \(source) "
            + "WHERE \(names.map { "\($0) IS NOT NULL" }.joined(separator: " AND "))"
        let statement: Statement
        if let condition, let filtered = try? db.makeStatement(sql: sql + " AND \(condition)") {
            statement = filtered
        } else {
            statement = try db.makeStatement(sql: sql)
        }
        let handle = statement.sqliteStatement
        let width = CInt(columns.count)
        var tuples: [DatabaseValue] = []
        var whole = true
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            for column in 0..<width {
                guard sqlite3_column_type(handle, column) == SQLITE_TEXT else {
                    tuples.append(DatabaseValue(sqliteStatement: handle, index: column))
                    continue
                }
                let text = UnsafeBufferPointer(
                    start: sqlite3_column_text(handle, column), count: Int(sqlite3_column_bytes(handle, column)))
                var key = String(decoding: text, as: UTF8.self)
                if !Self.same(&key, text) { whole = false }
                tuples.append(key.databaseValue)
            }
        }
        sqlite3_reset(handle)
        return (tuples, whole)
    }

    /// Whether `text` is `bytes` (not when the bytes were not UTF-8: they read as other text).
    private static func same(_ text: inout String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.utf8.count == bytes.count else { return false }
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return true }
        return text.withUTF8 { memcmp($0.baseAddress!, start, bytes.count) == 0 }
    }

    /// Whether `columns` of `parent` are its primary key or a unique index's columns (else
    /// SQLite reports a "foreign key mismatch" rather than checking the key).
    private func keyIsUnique(_ parent: String, columns: [String], in db: Database) throws -> Bool {
        let wanted = Set(columns.map { $0.lowercased() })
        let key = try String.fetchAll(
            db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0", arguments: [parent])
        if Set(key.map { $0.lowercased() }) == wanted { return true }
        for index in try String.fetchAll(
            db, sql: "SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1 AND partial = 0", arguments: [parent])
        {
            let members = try String.fetchAll(
                db, sql: "SELECT name FROM pragma_index_info(?) WHERE name IS NOT NULL", arguments: [index])
            if Set(members.map { $0.lowercased() }) == wanted && members.count == columns.count { return true }
        }
        return false
    }

    /// Whether each child column has the affinity of the parent column it takes its values from
    /// (a key copied into another affinity may be converted, and then name no parent row).
    private func sameAffinity(
        _ table: String, _ from: [String], _ parent: String, _ to: [String], in db: Database
    ) throws -> Bool {
        func types(_ table: String) throws -> [String: String] {
            Dictionary(
                try Row.fetchAll(db, sql: "SELECT name, type FROM pragma_table_info(?)", arguments: [table]).map {
                    (($0["name"] as String).lowercased(), ($0["type"] as String? ?? "").uppercased())
                }, uniquingKeysWith: { first, _ in first })
        }
        let child = try types(table), parents = try types(parent)
        return zip(from, to).allSatisfy { own, key in
            guard let mine = child[own.lowercased()] else { return false }
            // The implicit rowid of a parent without a declared one is an integer.
            guard let theirs = parents[key.lowercased()] ?? (key.lowercased() == "rowid" ? "INTEGER" : nil) else {
                return false
            }
            return mine == theirs || ColumnPlan.affinity(of: mine) == ColumnPlan.affinity(of: theirs)
        }
    }

    /// Makes every `UNIQUE` group of the table distinct row to row.
    private func planUniqueness(
        _ plan: inout TablePlan, table: String, keyColumns: [String], rowidAlias: Bool, in db: Database
    ) throws {
        var groups: [[String]] = []
        // A rowid alias counts rows by itself, unless it is a foreign key (`totals(athleteId
        // INTEGER PRIMARY KEY REFERENCES athlete)`): then each parent at most once.
        if !keyColumns.isEmpty
            && (!rowidAlias || plan.columns.contains { $0.link != nil && keyColumns.contains($0.name) })
        {
            groups.append(keyColumns)
        }
        for index in try Row.fetchAll(
            db, sql: "SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1", arguments: [table])
        {
            groups.append(
                try String.fetchAll(
                    db, sql: "SELECT name FROM pragma_index_info(?) WHERE name IS NOT NULL",
                    arguments: [index["name"] as String]))
        }
        let names = plan.columns.map { $0.name.lowercased() }
        // Unique indexes made after the rows go in: from their statements.
        for index in schema.objects
        where index.kind == .index && index.table.lowercased() == table.lowercased()
            && index.sql.range(of: #"^\s*CREATE\s+UNIQUE"#, options: [.regularExpression, .caseInsensitive]) != nil
        {
            let words = SQLTokens.indexTerms(inCreateIndex: index.sql).flatMap { SQLTokens.tokens($0) }
            groups.append(words.compactMap { if case .word(let w) = $0, names.contains(w) { w } else { nil } })
        }
        var enumerated: Set<String> = []
        // References tied by a shared column (two composite keys, a trigger's copies): one of
        // them enumerated at most, the others chosen to agree with it (``planSharing``).
        let ties = Self.ties(of: plan.references)
        var tiedEnumerated: Set<Int> = []
        for group in groups.map({ Set($0.map { $0.lowercased() }) }) where !group.isEmpty {
            let members = plan.columns.indices.filter { group.contains(names[$0]) }
            if members.contains(where: { plan.columns[$0].distinct || plan.columns[$0].isRowNumber }) { continue }
            if let free = members.first(where: {
                plan.columns[$0].link == nil && plan.columns[$0].domain?.isFinite != true && plan.columns[$0].isFree
            }) {
                plan.columns[free].distinct = true
                continue
            }
            for member in members {
                if let link = plan.columns[member].link {
                    guard !enumerated.contains("r\(link.0)"), !tiedEnumerated.contains(ties[link.0]) else { continue }
                    enumerated.insert("r\(link.0)")
                    tiedEnumerated.insert(ties[link.0])
                    plan.enumeration.append((.reference(link.0), plan.references[link.0].count))
                } else if let values = plan.columns[member].domain?.values, !enumerated.contains("c\(member)") {
                    enumerated.insert("c\(member)")
                    plan.enumeration.append((.column(member), values.count))
                }
            }
        }
    }
}
