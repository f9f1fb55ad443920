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
