import BackstageSystem
/// SQL text reduced to tokens, so two statements that SQLite reads the same way compare equal
/// whatever their whitespace, comments, keyword case or identifier quoting (`"ZNOTE"`, `[ZNOTE]`,
/// `` `ZNOTE` `` and `znote` are one name to SQLite). String literals keep their case.
package enum SQLTokens {
    package enum Token: Equatable, Sendable {
        case word(String)  // keyword or identifier, lower-cased and unquoted
        case literal(String)  // a string or blob literal, as written
        case symbol(String)  // punctuation, operators, numbers

        package var text: String {
            switch self {
            case .word(let text), .literal(let text), .symbol(let text): text
            }
        }
    }

    package static func tokens(_ sql: String) -> [Token] {
        let chars = Array(sql.unicodeScalars)
        var tokens: [Token] = []
        var i = 0
        func isWord(_ c: Unicode.Scalar) -> Bool {
            c == "_" || c == "$" || c.properties.isAlphabetic || ("0"..."9").contains(c) || c.value > 127
        }
        while i < chars.count {
            let c = chars[i]
            if c.properties.isWhitespace { i += 1; continue }
            if c == "-", i + 1 < chars.count, chars[i + 1] == "-" {
                while i < chars.count, chars[i] != "\n" { i += 1 }
                continue
            }
            if c == "/", i + 1 < chars.count, chars[i + 1] == "*" {
                i += 2
                while i + 1 < chars.count, !(chars[i] == "*" && chars[i + 1] == "/") { i += 1 }
                i += 2
                continue
            }
            if c == "'" || ((c == "x" || c == "X") && i + 1 < chars.count && chars[i + 1] == "'") {
                var text = ""
                if c != "'" { text.unicodeScalars.append("x"); i += 1 }
                text.unicodeScalars.append("'")
                i += 1
                while i < chars.count {
                    if chars[i] == "'" {
                        if i + 1 < chars.count, chars[i + 1] == "'" { text += "''"; i += 2; continue }
                        break
                    }
                    text.unicodeScalars.append(chars[i])
                    i += 1
                }
                i += 1
                tokens.append(.literal(text + "'"))
                continue
            }
            if c == "\"" || c == "`" || c == "[" {
                let close: Unicode.Scalar = c == "[" ? "]" : c
                var text = ""
                i += 1
                while i < chars.count {
                    if chars[i] == close {
                        if close != "]", i + 1 < chars.count, chars[i + 1] == close {
                            text.unicodeScalars.append(close); i += 2; continue
                        }
                        break
                    }
                    text.unicodeScalars.append(chars[i])
                    i += 1
                }
                i += 1
                tokens.append(.word(text.lowercased()))
                continue
            }
            if ("0"..."9").contains(c) || (c == "." && i + 1 < chars.count && ("0"..."9").contains(chars[i + 1])) {
                var text = ""
                while i < chars.count, isWord(chars[i]) || chars[i] == "." {
                    text.unicodeScalars.append(chars[i]); i += 1
                }
                tokens.append(.symbol(text.lowercased()))
                continue
            }
            if isWord(c) {
                var text = ""
                while i < chars.count, isWord(chars[i]) { text.unicodeScalars.append(chars[i]); i += 1 }
                tokens.append(.word(text.lowercased()))
                continue
            }
            if i + 1 < chars.count,
                ["<=", ">=", "<>", "!=", "==", "||", "<<", ">>", "->"].contains(String(c) + String(chars[i + 1]))
            {
                tokens.append(.symbol(String(c) + String(chars[i + 1])))
                i += 2
                continue
            }
            tokens.append(.symbol(String(c)))
            i += 1
        }
        return tokens
    }

    /// The statement as one line of normalized tokens; `IF NOT EXISTS` and a trailing `;` dropped.
    package static func normalized(_ sql: String) -> String {
        var list = tokens(sql)
        if let start = list.firstIndex(of: .word("if")), start + 2 < list.count, list[start + 1] == .word("not"),
            list[start + 2] == .word("exists")
        {
            list.removeSubrange(start...(start + 2))
        }
        while list.last == .symbol(";") { list.removeLast() }
        return join(list[...])
    }

    package static func join(_ tokens: ArraySlice<Token>) -> String {
        tokens.map(\.text).joined(separator: " ")
    }

    /// A declared type as SQLite reads it for comparison: upper-cased, single-spaced.
    package static func normalizedType(_ type: String) -> String {
        join(tokens(type)[...]).uppercased().replacingOccurrences(of: " ( ", with: "(").replacingOccurrences(
            of: " )", with: ")"
        ).replacingOccurrences(of: " , ", with: ",")
    }

    /// Splits the tokens between the outermost parentheses at top-level commas.
    package static func parenthesizedParts(
        _ tokens: [Token], from start: Int
    ) -> (parts: [ArraySlice<Token>], end: Int)? {
        guard let open = tokens[start...].firstIndex(of: .symbol("(")) else { return nil }
        var depth = 0
        var parts: [ArraySlice<Token>] = []
        var partStart = open + 1
        for index in open..<tokens.count {
            switch tokens[index] {
            case .symbol("("): depth += 1
            case .symbol(")"):
                depth -= 1
                if depth == 0 {
                    parts.append(tokens[partStart..<index])
                    return (parts, index)
                }
            case .symbol(","):
                if depth == 1 {
                    parts.append(tokens[partStart..<index])
                    partStart = index + 1
                }
            default: break
            }
        }
        return nil
    }

    /// Column name → declared collation (lower-cased), from a `CREATE TABLE` statement; columns
    /// `ALTER TABLE ADD COLUMN` added are in it too, as SQLite appends them to the statement.
    package static func columnCollations(inCreateTable sql: String) -> [String: String] {
        let list = tokens(sql)
        guard let (parts, _) = parenthesizedParts(list, from: 0) else { return [:] }
        let constraints: Set<String> = ["constraint", "primary", "unique", "check", "foreign"]
        var result: [String: String] = [:]
        for part in parts {
            guard case .word(let name)? = part.first, !constraints.contains(name) else { continue }
            let items = Array(part)
            if let at = items.firstIndex(of: .word("collate")), at + 1 < items.count {
                result[name] = items[at + 1].text
            }
        }
        return result
    }

    /// What a `CREATE TABLE` declares that SQLite's pragmas do not tell: whether a column is
    /// `AUTOINCREMENT`, the `CHECK` constraints (a column's and the table's alike, without their
    /// constraint names, sorted: the one `ALTER TABLE ADD COLUMN` appended to a column equals the
    /// one a fresh install declares on the table), and each generated column's expression.
    package static func tableClauses(
        inCreateTable sql: String
    ) -> (autoincrement: Bool, checks: [String], generated: [String: String]) {
        let list = tokens(sql)
        guard let (parts, _) = parenthesizedParts(list, from: 0) else { return (false, [], [:]) }
        let constraints: Set<String> = ["constraint", "primary", "unique", "check", "foreign"]
        var autoincrement = false
        var checks: [String] = []
        var generated: [String: String] = [:]
        for part in parts {
            let items = Array(part)
            var column: String?
            if case .word(let name)? = items.first, !constraints.contains(name) { column = name }
            var index = 0
            var depth = 0
            while index < items.count {
                switch items[index] {
                case .symbol("("): depth += 1
                case .symbol(")"): depth -= 1
                case .word("autoincrement") where depth == 0: autoincrement = true
                case .word("check") where depth == 0:
                    if let (expression, end) = parenthesized(items, at: index + 1) {
                        checks.append(expression)
                        index = end
                        continue
                    }
                case .word("as") where depth == 0 && column != nil && index > 0:
                    if let (expression, end) = parenthesized(items, at: index + 1), let column {
                        generated[column] = expression
                        index = end
                        continue
                    }
                default: break
                }
                index += 1
            }
        }
        return (autoincrement, checks.sorted(), generated)
    }

    /// The normalized tokens inside the parentheses opening at `start` (redundant outer
    /// parentheses dropped), and the index after the closing one; nil when no `(` is there.
    private static func parenthesized(_ items: [Token], at start: Int) -> (String, Int)? {
        guard start < items.count, items[start] == .symbol("(") else { return nil }
        var depth = 0
        for index in start..<items.count {
            if items[index] == .symbol("(") { depth += 1 }
            if items[index] == .symbol(")") { depth -= 1 }
            if depth == 0 {
                var inner = items[(start + 1)..<index]
                while inner.first == .symbol("("), inner.last == .symbol(")"), encloses(inner) {
                    inner = inner.dropFirst().dropLast()
                }
                return (join(inner), index + 1)
            }
        }
        return nil
    }

    /// True when the first `(` of `items` closes at its last token.
    private static func encloses(_ items: ArraySlice<Token>) -> Bool {
        var depth = 0
        for (offset, token) in items.enumerated() {
            if token == .symbol("(") { depth += 1 }
            if token == .symbol(")") { depth -= 1 }
            if depth == 0 { return offset == items.count - 1 }
        }
        return false
    }

    /// The key terms of a `CREATE INDEX`, normalized, in order (for expression columns).
    package static func indexTerms(inCreateIndex sql: String) -> [String] {
        let list = tokens(sql)
        guard let on = list.firstIndex(of: .word("on")), let (parts, _) = parenthesizedParts(list, from: on) else {
            return []
        }
        return parts.map { part in
            var items = Array(part)
            if let last = items.last, last == .word("asc") || last == .word("desc") { items.removeLast() }
            if let at = items.firstIndex(of: .word("collate")) { items.removeSubrange(at...) }
            return join(items[...])
        }
    }

    /// The normalized condition of a partial index, nil when it has none.
    package static func whereClause(inCreateIndex sql: String) -> String? {
        let list = tokens(sql)
        guard let on = list.firstIndex(of: .word("on")), let (_, end) = parenthesizedParts(list, from: on),
            end + 1 < list.count, list[end + 1] == .word("where")
        else { return nil }
        var rest = list[(end + 2)...]
        while rest.last == .symbol(";") { rest = rest.dropLast() }
        return join(rest)
    }
}
