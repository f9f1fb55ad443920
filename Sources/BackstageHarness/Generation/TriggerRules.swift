import Backstage
import Foundation

/// A rule a `RAISE` trigger states about a new row and another table's rows, met by construction:
/// the new row's `columns` take, together, the values of `parentColumns` of one row of `parent`.
/// A column whose name starts with ``TriggerCopy/virtualMark`` is no column of the row: a value
/// two copies must agree on (`(SELECT libraryID FROM collections WHERE collectionID =
/// NEW.collectionID) != (SELECT libraryID FROM items WHERE itemID = NEW.itemID)`: the collection
/// and the item of one library).
struct TriggerCopy: Hashable {
    static let virtualMark = "\u{1}"
    var columns: [String]
    var parent: String
    var parentColumns: [String]
}

/// A parent a `RAISE` trigger demands of the new row instead of (or beside) a declared foreign key:
/// `SELECT RAISE(ABORT, …) WHERE (SELECT id FROM parent WHERE id = NEW.parentId) IS NULL` is
/// "`parentId` takes `id` of a row of `parent`"; a condition on that row beside the key (`NOT
/// EXISTS (SELECT 1 FROM products WHERE id = NEW.product_id AND no_own_stock = 0)`) is what the
/// chosen row must be, met by choosing only such rows.
struct TriggerReference {
    var column: String
    var parent: String
    var parentColumn: String
    /// SQL over the parent's row that the row taken must satisfy (`(no_own_stock = 0)`, `(p.x = 1)
    /// IS NOT TRUE`), with `alias` naming the parent in it; nil: any row.
    var condition: String?
    var alias: String?
    /// The trigger that says so.
    var trigger: String
    /// The trigger refuses a row naming no such parent (false: it refuses one naming a parent that
    /// does not meet the condition, and naming none is allowed).
    var required = false
}

extension SchemaGenerator {
    /// The copies the `RAISE` triggers of `table` demand: `SELECT RAISE(...) WHERE (SELECT x FROM
    /// p WHERE y = NEW.c) != NEW.d` (`<>`, `IS NOT`, either side) is "`c`, `d` take `y`, `x` of
    /// one row of `p`"; two such subqueries compared are two copies sharing a value.
    func triggerCopies(of table: String) -> [TriggerCopy] {
        let tables = Dictionary(
            schema.tableNames.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        var copies: [TriggerCopy] = []
        for trigger in schema.objects
        where trigger.kind == .trigger && trigger.table.lowercased() == table.lowercased()
            && RowBatches.triggerEvent(trigger.sql) == "insert"
            && trigger.sql.range(of: "RAISE", options: .caseInsensitive) != nil
        {
            let tokens = SQLTokens.tokens(trigger.sql)
            var index = 0
            while index < tokens.count {
                guard let (left, afterLeft) = side(tokens, index, tables: tables),
                    let (isNot, afterOperator) = inequality(tokens, afterLeft),
                    let (right, end) = side(tokens, afterOperator, tables: tables), isNot
                else {
                    index += 1
                    continue
                }
                switch (left, right) {
                case (.lookup(let p, let x, let y, let c), .new(let d)),
                    (.new(let d), .lookup(let p, let x, let y, let c)):
                    copies.append(TriggerCopy(columns: [c, d], parent: p, parentColumns: [y, x]))
                case (.lookup(let p1, let x1, let y1, let c1), .lookup(let p2, let x2, let y2, let c2)):
                    let shared = TriggerCopy.virtualMark + "\(trigger.name).\(copies.count)"
                    copies.append(TriggerCopy(columns: [c1, shared], parent: p1, parentColumns: [y1, x1]))
                    copies.append(TriggerCopy(columns: [c2, shared], parent: p2, parentColumns: [y2, x2]))
                default: break
                }
                index = end
            }
        }
        return copies
    }

    /// What the `RAISE` triggers of `table` say a new row's columns must name in other tables
    /// (``TriggerReference``). A negative test with no condition beside the key (`EXISTS (SELECT 1
    /// FROM blocked WHERE user_id = NEW.user_id)`: the row must name no such row) demands nothing.
    func triggerReferences(of table: String) -> [TriggerReference] {
        let tables = Dictionary(
            schema.tableNames.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        var found: [TriggerReference] = []
        for trigger in schema.objects
        where trigger.kind == .trigger && trigger.table.lowercased() == table.lowercased()
            && trigger.sql.range(of: "RAISE", options: .caseInsensitive) != nil
        {
            let tokens = SQLTokens.tokens(trigger.sql)
            for index in tokens.indices where tokens[index] == .word("from") && index + 2 < tokens.count {
                guard case .word(let parentName) = tokens[index + 1], let parent = tables[parentName],
                    let subquery = Self.subquery(tokens, from: index)
                else { continue }
                guard let (key, condition, readable) = Self.keyAndCondition(tokens, subquery.conditions) else {
                    continue
                }
                var reference = TriggerReference(
                    column: key.column, parent: parent, parentColumn: key.parentColumn, condition: nil,
                    alias: subquery.alias, trigger: trigger.name)
                switch Self.demand(tokens, subquery) {
                case .some(true):
                    reference.condition = condition.map { "(\($0))" }
                    reference.required = condition != nil
                case .some(false):
                    // A row matching it is refused: take a row that does not match (none to take
                    // without a condition: the new row need name no such row). Unread, left to repairs.
                    guard readable else { break }
                    guard let condition else { continue }
                    reference.condition = "(\(condition)) IS NOT TRUE"
                case .none: break
                }
                found.append(reference)
            }
        }
        return found
    }

    /// The subquery whose `FROM` is at `from`: the alias of its table, where its condition
    /// starts and ends (the tokens after `WHERE`, to its closing parenthesis), and the
    /// parentheses around it (nil when it has no `WHERE`).
    private static func subquery(
        _ tokens: [SQLTokens.Token], from: Int
    ) -> (alias: String?, conditions: Range<Int>, open: Int?, close: Int)? {
        var at = from + 2, alias: String?
        if at + 1 < tokens.count, tokens[at] == .word("as"), case .word(let name) = tokens[at + 1] {
            (alias, at) = (name, at + 2)
        } else if at < tokens.count, case .word(let name) = tokens[at], name != "where" {
            (alias, at) = (name, at + 1)
        }
        guard at < tokens.count, tokens[at] == .word("where") else { return nil }
        var end = at + 1, depth = 0
        let stops: Set<String> = ["group", "order", "limit", "then", "end", "union"]
        scan: while end < tokens.count {
            switch tokens[end] {
            case .symbol("("): depth += 1
            case .symbol(")"):
                if depth == 0 { break scan }
                depth -= 1
            case .symbol(";") where depth == 0: break scan
            case .word(let word) where depth == 0 && stops.contains(word): break scan
            default: break
            }
            end += 1
        }
        // The `SELECT` this `FROM` belongs to, and the parenthesis before it.
        var select = from - 1, nesting = 0
        while select >= 0 {
            if tokens[select] == .symbol(")") { nesting += 1 }
            if tokens[select] == .symbol("(") { nesting -= 1 }
            if nesting == 0 && tokens[select] == .word("select") { break }
            select -= 1
        }
        let open = select > 0 && tokens[select - 1] == .symbol("(") ? select - 1 : nil
        return (alias, (at + 1)..<end, open, end)
    }

    /// In a subquery's condition, the conjunct tying the new row to the parent (`p.id = NEW.c`,
    /// either way round) and the others, which read only the parent's row, as SQL (nil: none).
    /// `readable` false when another conjunct reads the new row too (the key alone is kept). Nil
    /// when there is no such conjunct, or an `OR` joins them.
    private static func keyAndCondition(
        _ tokens: [SQLTokens.Token], _ range: Range<Int>
    ) -> (key: (column: String, parentColumn: String), condition: String?, readable: Bool)? {
        var conjuncts: [ArraySlice<SQLTokens.Token>] = []
        var start = range.lowerBound, depth = 0
        for at in range {
            switch tokens[at] {
            case .symbol("("): depth += 1
            case .symbol(")"): depth -= 1
            case .word("or") where depth == 0: return nil
            case .word("and") where depth == 0:
                conjuncts.append(tokens[start..<at])
                start = at + 1
            default: break
            }
        }
        conjuncts.append(tokens[start..<range.upperBound])
        func column(_ side: ArraySlice<SQLTokens.Token>) -> (name: String, new: Bool)? {
            let items = Array(side)
            if items.count == 1, case .word(let name) = items[0] { return (name, false) }
            if items.count == 3, items[1] == .symbol("."), case .word(let qualifier) = items[0],
                case .word(let name) = items[2]
            {
                return (name, qualifier == "new")
            }
            return nil
        }
        var key: (String, String)?, rest: [String] = [], readable = true
        for conjunct in conjuncts {
            if key == nil,
                let equals = conjunct.firstIndex(where: { $0 == .symbol("=") || $0 == .symbol("==") }),
                let left = column(conjunct[..<equals]), let right = column(conjunct[(equals + 1)...]),
                left.new != right.new
            {
                key = left.new ? (left.name, right.name) : (right.name, left.name)
                continue
            }
            if conjunct.contains(.word("new")) {
                readable = false
                continue
            }
            rest.append(sql(conjunct))
        }
        guard let key else { return nil }
        return ((key.0, key.1), rest.isEmpty || !readable ? nil : rest.joined(separator: " AND "), readable)
    }

    /// Tokens as SQL again: identifiers that need it quoted.
    private static func sql(_ tokens: ArraySlice<SQLTokens.Token>) -> String {
        tokens.map { token in
            guard case .word(let word) = token,
                word.range(of: #"^[a-z_][a-z0-9_$]*$"#, options: .regularExpression) == nil
            else { return token.text }
            return word.quotedSQLIdentifier
        }.joined(separator: " ").replacingOccurrences(of: " . ", with: ".")
    }

    /// Whether the trigger refuses the row when no parent row matches (true: one must), when one
    /// does (false: none may), or nil when its test says neither: `NOT EXISTS (…)`, `(…) IS NULL`,
    /// `(SELECT COUNT(*) …) = 0` demand one; `EXISTS (…)`, `(…) IS NOT NULL`, `… > 0` refuse one.
    private static func demand(
        _ tokens: [SQLTokens.Token], _ subquery: (alias: String?, conditions: Range<Int>, open: Int?, close: Int)
    ) -> Bool? {
        guard let open = subquery.open, subquery.close < tokens.count, tokens[subquery.close] == .symbol(")") else {
            return nil
        }
        if open > 0, tokens[open - 1] == .word("exists") {
            return open > 1 && tokens[open - 2] == .word("not")
        }
        let after = Array(tokens[min(subquery.close + 1, tokens.count)...].prefix(3))
        switch after.first {
        case .word("is"):
            if after.count > 1, after[1] == .word("null") { return true }
            if after.count > 2, after[1] == .word("not"), after[2] == .word("null") { return false }
        case .word("isnull"): return true
        case .word("notnull"): return false
        case .word("not") where after.count > 1 && after[1] == .word("null"): return false
        case .symbol("=") where after.count > 1 && after[1] == .symbol("0"): return true
        case .symbol("<") where after.count > 1 && after[1] == .symbol("1"): return true
        case .symbol(">") where after.count > 1 && after[1] == .symbol("0"): return false
        case .symbol(">=") where after.count > 1 && after[1] == .symbol("1"): return false
        case .symbol("!="), .symbol("<>"):
            if after.count > 1, after[1] == .symbol("0") { return false }
        default: break
        }
        return nil
    }

    /// The trigger of `table` whose `RAISE` says `message`, and the columns of the new row it reads.
    func raisingTrigger(of table: String, message: String) -> (name: String, columns: [String])? {
        let triggers = schema.objects.filter {
            $0.kind == .trigger && $0.table.lowercased() == table.lowercased()
                && $0.sql.range(of: "RAISE", options: .caseInsensitive) != nil
        }
        let literal = "'" + message.replacingOccurrences(of: "'", with: "''") + "'"
        guard
            let trigger = triggers.first(where: { $0.sql.contains(literal) })
                ?? (triggers.count == 1 ? triggers[0] : nil)
        else { return nil }
        var columns: [String] = []
        for column in SchemaRules.replacingNew(trigger.sql, with: table).1 where !columns.contains(column) {
            columns.append(column)
        }
        return (trigger.name, columns)
    }

    private enum Side {
        /// `(SELECT x FROM p WHERE y = NEW.c)`
        case lookup(parent: String, column: String, key: String, from: String)
        /// `NEW.d`
        case new(String)
    }

    /// The side of a comparison starting at `index`, and where it ends.
    private func side(_ tokens: [SQLTokens.Token], _ index: Int, tables: [String: String]) -> (Side, Int)? {
        func word(_ at: Int) -> String? {
            guard at < tokens.count, case .word(let name) = tokens[at] else { return nil }
            return name
        }
        /// A column, perhaps qualified (`p.x`): its name and the index after it.
        func column(_ at: Int) -> (String, Int)? {
            guard let name = word(at) else { return nil }
            if at + 2 < tokens.count, tokens[at + 1] == .symbol("."), let qualified = word(at + 2) {
                return (qualified, at + 3)
            }
            return (name, at + 1)
        }
        func newColumn(_ at: Int) -> (String, Int)? {
            guard word(at) == "new", at + 2 < tokens.count, tokens[at + 1] == .symbol("."), let name = word(at + 2)
            else { return nil }
            return (name, at + 3)
        }
        if let (name, end) = newColumn(index) { return (.new(name), end) }
        guard index < tokens.count, tokens[index] == .symbol("("), word(index + 1) == "select",
            let (x, afterX) = column(index + 2), word(afterX) == "from",
            let p = word(afterX + 1).flatMap({ tables[$0] }),
            word(afterX + 2) == "where"
        else { return nil }
        let at = afterX + 3
        var key: String?, from: String?, end = at
        if let (y, afterY) = column(at), afterY < tokens.count,
            tokens[afterY] == .symbol("=") || tokens[afterY] == .symbol("=="), let (c, afterC) = newColumn(afterY + 1)
        {
            (key, from, end) = (y, c, afterC)
        } else if let (c, afterC) = newColumn(at), afterC < tokens.count,
            tokens[afterC] == .symbol("=") || tokens[afterC] == .symbol("=="), let (y, afterY) = column(afterC + 1)
        {
            (key, from, end) = (y, c, afterY)
        }
        guard let key, let from, end < tokens.count, tokens[end] == .symbol(")") else { return nil }
        return (.lookup(parent: p, column: x, key: key, from: from), end + 1)
    }

    /// `!=`, `<>` or `IS NOT` at `index` (true), `=`, `==` or `IS` (false), and the index after it.
    private func inequality(_ tokens: [SQLTokens.Token], _ index: Int) -> (Bool, Int)? {
        guard index < tokens.count else { return nil }
        switch tokens[index] {
        case .symbol("!="), .symbol("<>"): return (true, index + 1)
        case .symbol("="), .symbol("=="): return (false, index + 1)
        case .word("is"):
            if index + 1 < tokens.count, tokens[index + 1] == .word("not") { return (true, index + 2) }
            return (false, index + 1)
        default: return nil
        }
    }
}
