import Backstage
import Foundation
import GRDB

/// One `CHECK` constraint of a table: its SQL, the columns it reads, and — when it reads one
/// column in a shape the generator knows — what it allows of that column.
struct CheckConstraint {
    /// The expression as written (normalized tokens), for errors.
    var sql: String
    /// The columns it names, lower-cased.
    var columns: [String]
    /// The literals it holds (candidates for a column it reads), in order.
    var literals: [DatabaseValue]
}

/// What the `CHECK` constraints of a table allow of one column, read from the constraints
/// themselves (never from the user's rows): a list of values (`IN`, `=`), a numeric range
/// (comparisons, `BETWEEN`), a length range (`length()`), a `GLOB` or `LIKE` pattern, the storage
/// classes `typeof()` accepts, and whether it must not be NULL.
struct ColumnDomain {
    var values: [DatabaseValue]?
    var lower: Double?
    var lowerStrict = false
    var upper: Double?
    var upperStrict = false
    var minLength: Int?
    var maxLength: Int?
    var glob: String?
    var like: String?
    var kinds: Set<String>?
    var notNull = false
    /// `json_valid(c)`: JSON text.
    var json = false
    /// `date(c)`, `datetime(c)`, `julianday(c)`, `strftime(…, c)`…: a date SQLite reads.
    var date = false
    /// Characters `c NOT LIKE '%X%'` (or `NOT GLOB '*X*'`) leaves out.
    var excluded: Set<Character> = []
    /// `c = lower(c)`, `c = upper(c)`, `c = trim(c)`: the text as the function returns it.
    var caseFunction: String?

    var isFinite: Bool { values != nil }
}

/// Reads the `CHECK` constraints of a `CREATE TABLE` statement.
enum CheckParser {
    typealias Token = SQLTokens.Token

    /// The constraints of `createTable` and the domain each column's own constraints give it.
    static func parse(
        _ createTable: String, columns: [String]
    ) -> (checks: [CheckConstraint], domains: [String: ColumnDomain]) {
        let names = Set(columns.map { $0.lowercased() })
        let tokens = SQLTokens.tokens(createTable)
        var checks: [CheckConstraint] = []
        var domains: [String: ColumnDomain] = [:]
        var index = 0
        while index < tokens.count {
            defer { index += 1 }
            guard tokens[index] == .word("check"), let (expression, end) = balanced(tokens, from: index + 1) else {
                continue
            }
            index = end
            var used: [String] = []
            for case .word(let word) in expression where names.contains(word) && !used.contains(word) {
                used.append(word)
            }
            checks.append(
                CheckConstraint(sql: SQLTokens.join(expression[...]), columns: used, literals: literals(expression)))
            if used.count == 1 {
                var domain = domains[used[0]] ?? ColumnDomain()
                for conjunct in split(expression, on: "and") { apply(conjunct, column: used[0], to: &domain) }
                domains[used[0]] = domain
            }
        }
        return (checks, domains)
    }

    /// The tokens inside the parentheses that open at `start`, and the index of the closing one.
    static func balanced(_ tokens: [Token], from start: Int) -> ([Token], Int)? {
        guard start < tokens.count, tokens[start] == .symbol("(") else { return nil }
        var depth = 0
        for index in start..<tokens.count {
            if tokens[index] == .symbol("(") { depth += 1 }
            if tokens[index] == .symbol(")") {
                depth -= 1
                if depth == 0 { return (Array(tokens[(start + 1)..<index]), index) }
            }
        }
        return nil
    }

    /// Splits at top-level `AND` (or `OR`), the `AND` of a `BETWEEN` kept.
    static func split(_ tokens: [Token], on word: String) -> [[Token]] {
        var parts: [[Token]] = [[]]
        var depth = 0
        var betweens = 0
        for token in tokens {
            if token == .symbol("(") { depth += 1 }
            if token == .symbol(")") { depth -= 1 }
            if depth == 0 && token == .word("between") { betweens += 1 }
            if depth == 0 && token == .word(word) {
                if word == "and" && betweens > 0 { betweens -= 1 } else { parts.append([]); continue }
            }
            parts[parts.count - 1].append(token)
        }
        return parts.filter { !$0.isEmpty }
    }

    /// The tokens without the parentheses that wrap all of them.
    static func unwrapped(_ tokens: [Token]) -> [Token] {
        var tokens = tokens
        while tokens.first == .symbol("("), let (inner, end) = balanced(tokens, from: 0), end == tokens.count - 1 {
            tokens = inner
        }
        return tokens
    }

    static func literal(_ tokens: [Token]) -> DatabaseValue? {
        let tokens = unwrapped(tokens)
        var sign = 1.0
        var rest = tokens[...]
        if rest.first == .symbol("-") {
            sign = -1; rest = rest.dropFirst()
        } else if rest.first == .symbol("+") {
            rest = rest.dropFirst()
        }
        guard rest.count == 1, let token = rest.first else { return nil }
        switch token {
        case .literal(let text) where text.hasPrefix("'"):
            return String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'").databaseValue
        case .symbol(let number):
            if let integer = Int64(number) { return (Int64(sign) * integer).databaseValue }
            if let real = Double(number) { return (sign * real).databaseValue }
            return nil
        case .word("null"):
            return .null
        default:
            return nil
        }
    }

    static func literals(_ tokens: [Token]) -> [DatabaseValue] {
        var found: [DatabaseValue] = []
        for (index, token) in tokens.enumerated() {
            var value: DatabaseValue?
            switch token {
            case .literal: value = literal([token])
            case .symbol(let text) where Double(text) != nil:
                value = literal(index > 0 && tokens[index - 1] == .symbol("-") ? [.symbol("-"), token] : [token])
            default: break
            }
            if let value, !value.isNull, !found.contains(value) { found.append(value) }
        }
        return found
    }

    /// Narrows `domain` by one conjunct that reads only `column`; shapes it does not know are left
    /// to the insert (and the generator's repairs).
    static func apply(_ conjunct: [Token], column: String, to domain: inout ColumnDomain) {
        let tokens = unwrapped(conjunct)
        let alternatives = split(tokens, on: "or").map(unwrapped)
        if alternatives.count > 1 {
            // `c IS NULL OR …`: the rest; `c = 'a' OR c = 'b'`: a list.
            let rest = alternatives.filter {
                $0 != [.word(column), .word("is"), .word("null")] && $0 != [.word(column), .word("isnull")]
            }
            if rest.count == 1 { apply(rest[0], column: column, to: &domain); return }
            var values: [DatabaseValue] = []
            for alternative in rest {
                var single = ColumnDomain()
                apply(alternative, column: column, to: &single)
                guard let list = single.values else { return }
                values += list
            }
            domain.values = values
            return
        }
        guard let first = tokens.first else { return }
        if tokens == [.word(column), .word("is"), .word("not"), .word("null")]
            || tokens == [.word(column), .word("notnull")]
            || tokens == [.word(column), .word("not"), .word("null")]
        {
            domain.notNull = true
            return
        }
        // c NOT LIKE '%X%': no X; c = lower(c) (or turned around): lower-case text.
        if tokens.count == 4, tokens[0] == .word(column), tokens[1] == .word("not"),
            [.word("like"), .word("glob")].contains(tokens[2]),
            case .literal(let quoted) = tokens[3]
        {
            let pattern = quoted.dropFirst().dropLast()
            let inner = pattern.filter { $0 != "%" && $0 != "*" }
            if pattern.count == inner.count + 2, inner.count == 1, let character = inner.first {
                domain.excluded.insert(character); return
            }
        }
        for function in ["lower", "upper", "trim"] {
            let call: [Token] = [.word(function), .symbol("("), .word(column), .symbol(")")]
            if tokens == [.word(column), .symbol("=")] + call || tokens == call + [.symbol("="), .word(column)] {
                domain.caseFunction = function; return
            }
        }
        // json_valid(c), date(c) IS NOT NULL, c = datetime(c): what the function reads.
        if tokens.contains(where: { $0 == .word("json_valid") || $0 == .word("json") }) { domain.json = true }
        if tokens.contains(where: {
            ["date", "datetime", "julianday", "strftime", "unixepoch", "time"].contains($0.text) && $0 != .word(column)
        }) {
            domain.date = true
        }
        // length(c) …, typeof(c) …
        if case .word(let function) = first, ["length", "typeof"].contains(function),
            let (inner, end) = balanced(tokens, from: 1),
            unwrapped(inner) == [.word(column)]
        {
            let rest = Array(tokens[(end + 1)...])
            if function == "typeof" {
                var kinds = ColumnDomain()
                comparison(rest, to: &kinds)
                domain.kinds = Set((kinds.values ?? []).compactMap { String.fromDatabaseValue($0) })
                if domain.kinds?.contains("null") == false { domain.notNull = true }  // typeof(NULL) is 'null
            } else {
                var lengths = ColumnDomain()
                comparison(rest, to: &lengths)
                if let low = lengths.lower {
                    domain.minLength = max(domain.minLength ?? 0, Int(low.rounded(.up)) + (lengths.lowerStrict ? 1 : 0))
                }
                if let high = lengths.upper {
                    domain.maxLength = min(
                        domain.maxLength ?? .max, Int(high.rounded(.down)) - (lengths.upperStrict ? 1 : 0))
                }
                if let exact = lengths.values?.compactMap({ Int.fromDatabaseValue($0) }), let length = exact.first {
                    domain.minLength = length
                    domain.maxLength = length
                }
            }
            return
        }
        if first == .word(column) {
            comparison(Array(tokens.dropFirst()), to: &domain)
            return
        }
        // N < c, 'a' = c: the comparison turned around.
        if let last = tokens.last, last == .word(column), tokens.count >= 3 {
            let flipped: [String: String] = ["<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "==": "=="]
            if case .symbol(let op) = tokens[tokens.count - 2], let turned = flipped[op] {
                comparison([.symbol(turned)] + tokens.dropLast(2), to: &domain)
            }
        }
    }

    /// `op operand` after the column (or the function of it).
    static func comparison(_ rest: [Token], to domain: inout ColumnDomain) {
        guard let op = rest.first else { return }
        let operand = Array(rest.dropFirst())
        switch op {
        case .word("in"):
            guard let (inner, _) = balanced(operand, from: 0) else { return }
            let items = inner.split(separator: .symbol(",")).map { literal(Array($0)) }
            if items.allSatisfy({ $0 != nil }) { domain.values = items.compactMap { $0 }.filter { !$0.isNull } }
        case .word("between"):
            let bounds = operand.split(separator: .word("and")).map { literal(Array($0)) }
            if bounds.count == 2, let low = bounds[0].flatMap(Double.fromDatabaseValue),
                let high = bounds[1].flatMap(Double.fromDatabaseValue)
            {
                domain.lower = max(domain.lower ?? -.infinity, low)
                domain.upper = min(domain.upper ?? .infinity, high)
            }
        case .word("glob"):
            if let pattern = literal(operand).flatMap(String.fromDatabaseValue) { domain.glob = pattern }
        case .word("like"):
            if let pattern = literal(operand).flatMap(String.fromDatabaseValue) { domain.like = pattern }
        case .symbol(let symbol):
            guard let value = literal(operand) else { return }
            let number = Double.fromDatabaseValue(value)
            switch symbol {
            case "=", "==":
                domain.values = [value]
            case "<>", "!=":
                if String.fromDatabaseValue(value) == "" { domain.minLength = max(domain.minLength ?? 0, 1) }
            case ">", ">=":
                guard let number else { return }
                if number > (domain.lower ?? -.infinity) || (number == domain.lower && symbol == ">") {
                    domain.lower = number
                    domain.lowerStrict = symbol == ">"
                }
            case "<", "<=":
                guard let number else { return }
                if number < (domain.upper ?? .infinity) || (number == domain.upper && symbol == "<") {
                    domain.upper = number
                    domain.upperStrict = symbol == "<"
                }
            default: break
            }
        default: break
        }
    }
}
