import Foundation

/// The rules a schema states about each row, read from its SQL as written (quotes, case and
/// spacing kept, so that each can be run as SQL again): a table's `CHECK` expressions, and the
/// condition under which an `INSERT` trigger's `RAISE` refuses a row.
enum SchemaRules {
    /// A trigger's refusal as a condition on the rows of its table: `condition` (with `NEW.c`
    /// written as the table's `c`) holds for a row the trigger would have refused.
    struct Refusal: Hashable {
        var trigger: String
        var table: String
        var condition: String
        /// The columns it reads of the new row (`NEW.c`), lower-cased.
        var columns: [String]
    }

    /// The text of each `CHECK (...)` of a `CREATE TABLE` statement.
    static func checks(inCreateTable sql: String) -> [String] {
        let text = Array(sql)
        var found: [String] = []
        var index = 0
        while let at = nextWord("check", in: text, from: index) {
            index = at + 5
            var open = index
            while open < text.count, text[open].isWhitespace { open += 1 }
            guard open < text.count, text[open] == "(", let close = closing(text, open) else { continue }
            found.append(String(text[(open + 1)..<close]))
            index = close + 1
        }
        return found
    }

    /// The refusals of an `INSERT` trigger (`BEFORE` or `AFTER`) of `table`: each statement
    /// `SELECT RAISE(...) [WHERE cond]` or `SELECT CASE WHEN cond THEN RAISE(...) END`, joined to
    /// the trigger's `WHEN`. None for a condition that reads `OLD`, the trigger's own table, or
    /// anything a row cannot be checked against afterwards.
    static func refusals(inTrigger sql: String, name: String, table: String) -> [Refusal] {
        let text = Array(sql)
        guard let begin = nextWord("begin", in: text, from: 0) else { return [] }
        var when = "1"
        if let at = nextWord("when", in: text, from: 0), at < begin {
            when = String(text[(at + 4)..<begin])
        }
        var end = text.count
        if let last = lastWord("end", in: text), last > begin { end = last }
        var refusals: [Refusal] = []
        for statement in split(Array(text[(begin + 5)..<end])) {
            let words = String(statement).trimmingCharacters(in: .whitespacesAndNewlines)
            let body = Array(words)
            guard let select = nextWord("select", in: body, from: 0), select == 0 else { continue }
            var condition: String?
            if let raise = nextWord("raise", in: body, from: 0) {
                var open = raise + 5
                while open < body.count, body[open].isWhitespace { open += 1 }
                if let caseAt = nextWord("case", in: body, from: 0), caseAt < raise,
                    let whenAt = nextWord("when", in: body, from: caseAt),
                    let thenAt = nextWord("then", in: body, from: whenAt),
                    thenAt < raise, nextWord("when", in: body, from: whenAt + 4).map({ $0 > raise }) ?? true
                {
                    condition = String(body[(whenAt + 4)..<thenAt])
                } else if open < body.count, body[open] == "(", let close = closing(body, open),
                    String(body[(select + 6)..<raise]).allSatisfy(\.isWhitespace)
                {
                    let rest = Array(body[(close + 1)...])
                    let trimmed = String(rest).trimmingCharacters(in: .whitespacesAndNewlines)
                    if trimmed.isEmpty {
                        condition = "1"
                    } else if let whereAt = nextWord("where", in: rest, from: 0),
                        String(rest[..<whereAt]).trimmingCharacters(in: .whitespaces).isEmpty
                    {
                        condition = String(rest[(whereAt + 5)...])
                    }
                }
            }
            guard let condition else { continue }
            let whole = "(\(when)) AND (\(condition))"
            let lowered = whole.lowercased()
            let own = table.lowercased()
            guard nextWord("old", in: Array(lowered), from: 0) == nil,
                nextWord("raise", in: Array(lowered), from: 0) == nil,
                nextWord(own, in: Array(lowered), from: 0) == nil,
                !lowered.contains("changes()"), !lowered.contains("last_insert_rowid")
            else { continue }
            let (rewritten, columns) = replacingNew(whole, with: table)
            refusals.append(Refusal(trigger: name, table: table, condition: rewritten, columns: columns))
        }
        return refusals
    }

    /// `expression` with each `NEW.c` (outside quotes) written as `"table".c`; and the `c`s.
    static func replacingNew(_ expression: String, with table: String) -> (String, [String]) {
        let text = Array(expression)
        var out = "", columns: [String] = []
        var index = 0
        let qualified = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\"."
        while index < text.count {
            if let skipped = quoted(text, index) {
                out += String(text[index..<skipped])
                index = skipped
                continue
            }
            if isWordStart(text, index), index + 3 < text.count, String(text[index..<(index + 3)]).lowercased() == "new"
            {
                var dot = index + 3
                while dot < text.count, text[dot].isWhitespace { dot += 1 }
                if dot < text.count, text[dot] == "." {
                    out += qualified
                    var name = dot + 1
                    while name < text.count, text[name].isWhitespace { name += 1 }
                    var stop = name
                    if let skipped = quoted(text, name) {
                        stop = skipped
                        columns.append(String(text[(name + 1)..<(stop - 1)]).lowercased())
                    } else {
                        while stop < text.count, text[stop].isLetter || text[stop].isNumber || text[stop] == "_" {
                            stop += 1
                        }
                        columns.append(String(text[name..<stop]).lowercased())
                    }
                    out += String(text[name..<stop])
                    index = stop
                    continue
                }
            }
            out.append(text[index])
            index += 1
        }
        return (out, columns)
    }

    // MARK: Scanning

    /// The end (exclusive) of the quoted text starting at `index`, nil when none starts there.
    private static func quoted(_ text: [Character], _ index: Int) -> Int? {
        let open = text[index]
        guard open == "'" || open == "\"" || open == "`" || open == "[" else { return nil }
        let close: Character = open == "[" ? "]" : open
        var at = index + 1
        while at < text.count {
            if text[at] == close {
                if close != "]", at + 1 < text.count, text[at + 1] == close {
                    at += 2
                    continue
                }
                return at + 1
            }
            at += 1
        }
        return text.count
    }

    private static func isWordCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "$" }

    private static func isWordStart(_ text: [Character], _ index: Int) -> Bool {
        index == 0 || !isWordCharacter(text[index - 1])
    }

    /// Where the word `word` (lower-case) starts next outside quotes and comments, at any depth.
    private static func nextWord(_ word: String, in text: [Character], from start: Int) -> Int? {
        let target = Array(word)
        var index = start
        while index < text.count {
            if let skipped = quoted(text, index) {
                index = skipped
                continue
            }
            if text[index] == "-", index + 1 < text.count, text[index + 1] == "-" {
                while index < text.count, text[index] != "\n" { index += 1 }
                continue
            }
            if isWordStart(text, index), index + target.count <= text.count,
                zip(text[index..<(index + target.count)], target).allSatisfy({ $0.lowercased() == String($1) }),
                index + target.count == text.count || !isWordCharacter(text[index + target.count])
            {
                return index
            }
            index += 1
        }
        return nil
    }

    private static func lastWord(_ word: String, in text: [Character]) -> Int? {
        var found: Int?, index = 0
        while let at = nextWord(word, in: text, from: index) {
            found = at
            index = at + 1
        }
        return found
    }

    /// The index of the `)` closing the `(` at `open`.
    private static func closing(_ text: [Character], _ open: Int) -> Int? {
        var depth = 0, index = open
        while index < text.count {
            if let skipped = quoted(text, index) {
                index = skipped
                continue
            }
            if text[index] == "(" { depth += 1 }
            if text[index] == ")" {
                depth -= 1
                if depth == 0 { return index }
            }
            index += 1
        }
        return nil
    }

    /// The statements of a trigger's body, split at `;` outside quotes and parentheses.
    private static func split(_ text: [Character]) -> [[Character]] {
        var parts: [[Character]] = [], current: [Character] = []
        var depth = 0, index = 0
        while index < text.count {
            if let skipped = quoted(text, index) {
                current += text[index..<skipped]
                index = skipped
                continue
            }
            let c = text[index]
            if c == "(" { depth += 1 }
            if c == ")" { depth -= 1 }
            if c == ";" && depth == 0 {
                parts.append(current)
                current = []
            } else {
                current.append(c)
            }
            index += 1
        }
        if !current.allSatisfy(\.isWhitespace) { parts.append(current) }
        return parts
    }
}
