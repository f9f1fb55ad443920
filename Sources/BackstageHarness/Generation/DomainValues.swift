import Foundation
import GRDB

extension ColumnDomain {
    /// `value` made to satisfy the domain. `distinct` is a number that differs row to row when the
    /// column's values must (a key, a `UNIQUE` column): the value made then differs too.
    func fit(
        _ value: DatabaseValue, distinct: Int?, affinity: ColumnPlan.Affinity, random: inout SeededRandom
    ) -> DatabaseValue {
        if value.isNull && distinct == nil && !notNull { return value }
        if date {
            // A day and time from the number: distinct when it is (a second apart).
            let dayOnly = (maxLength ?? 19) < 19
            // Within 1970-2105 (four-digit years): a day, or a second, per distinct number.
            let offset = distinct ?? Int(random.next() % 400_000_000)
            let seconds = dayOnly ? offset % 40_000 * 86_400 : offset % 4_000_000_000
            let text = Self.dateTime(seconds)
            return (dayOnly ? String(text.prefix(10)) : text).databaseValue
        }
        if json {
            let text = String.fromDatabaseValue(value) ?? String(describing: distinct ?? 0)
            let escaped = text.unicodeScalars.map {
                $0 == "\"" || $0 == "\\" ? "\\\($0)" : ($0.value < 0x20 ? " " : String($0))
            }.joined()
            return "[\"\(distinct.map { String($0) + " " } ?? "")\(escaped)\"]".databaseValue
        }
        if let values, !values.isEmpty {
            if let distinct { return values[distinct % values.count] }
            return values.contains(value) ? value : values[Int(random.next() % UInt64(values.count))]
        }
        var value = value.isNull ? (affinity == .text ? "".databaseValue : 0.databaseValue) : value
        let kind = targetKind(of: value, affinity: affinity)
        if lower != nil || upper != nil || kind == "integer" || kind == "real" {
            if kind == "integer" || kind == "real" || lower != nil || upper != nil {
                if let number = number(value, kind: kind, distinct: distinct, random: &random) { value = number }
            }
        }
        if kind == "text" || glob != nil || like != nil || minLength != nil || maxLength != nil || !excluded.isEmpty
            || caseFunction != nil
        {
            if kind == "text" || !(value.storage.isNumeric) {
                value = text(value, distinct: distinct, random: &random).databaseValue
            }
        }
        if kind == "blob", case .blob = value.storage {
        } else if kind == "blob" {
            value = Data(String(describing: distinct ?? Int(random.next() % 1_000_000)).utf8).databaseValue
        }
        return value
    }

    private func targetKind(of value: DatabaseValue, affinity: ColumnPlan.Affinity) -> String {
        let current: String =
            switch value.storage {
            case .int64: "integer"
            case .double: "real"
            case .string: "text"
            case .blob: "blob"
            case .null: "null"
            }
        if let kinds, !kinds.contains(current) {
            return ["integer", "real", "text", "blob"].first { kinds.contains($0) } ?? current
        }
        if lower != nil || upper != nil, current == "text" || current == "blob" {
            return affinity == .real ? "real" : "integer"
        }
        return current
    }

    /// `YYYY-MM-DD HH:MM:SS` (UTC) of a Unix time, as SQLite's `datetime()` writes it (days to a
    /// civil date by Howard Hinnant's algorithm: no formatter per row).
    static func dateTime(_ unix: Int) -> String {
        let (year, month, day, second) = civil(unix)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60))"
    }

    /// The civil date of a Unix time (not before 1970), and the second of its day.
    static func civil(_ unix: Int) -> (year: Int, month: Int, day: Int, second: Int) {
        let days = unix / 86_400, second = unix % 86_400
        let z = days + 719_468, era = z / 146_097, doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day, second)
    }

    /// Writes ``dateTime(_:)`` of `unix` (a year of four digits) at `start`, or its first 10 bytes
    /// (`YYYY-MM-DD`) when `dateOnly`; returns the bytes written. No `String` made.
    static func writeDateTime(into start: UnsafeMutablePointer<UInt8>, unix: Int, dateOnly: Bool) -> Int {
        let (year, month, day, second) = civil(unix)
        func digits(_ value: Int, _ count: Int, at offset: Int) {
            var value = value
            for index in stride(from: count - 1, through: 0, by: -1) {
                start[offset + index] = UInt8(48 + value % 10)
                value /= 10
            }
        }
        digits(year, 4, at: 0)
        start[4] = 45  // -
        digits(month, 2, at: 5)
        start[7] = 45
        digits(day, 2, at: 8)
        guard !dateOnly else { return 10 }
        start[10] = 32  // space
        digits(second / 3600, 2, at: 11)
        start[13] = 58  // :
        digits(second / 60 % 60, 2, at: 14)
        start[16] = 58
        digits(second % 60, 2, at: 17)
        return 19
    }

    /// A number within the range: an integer where one fits, else a real.
    private func number(
        _ value: DatabaseValue, kind: String, distinct: Int?, random: inout SeededRandom
    ) -> DatabaseValue? {
        let low = lower ?? -.infinity, high = upper ?? .infinity
        let current = Double.fromDatabaseValue(value)
        if distinct == nil, let current, current > low || (current == low && !lowerStrict),
            current < high || (current == high && !upperStrict), kind != "text"
        {
            return kind == "integer" && current.rounded() != current
                ? Int64(current.rounded(.down)).databaseValue : value
        }
        var first = low.isFinite ? low.rounded(.up) : (high.isFinite ? high.rounded(.down) - 1_000_000 : 0)
        if lowerStrict && first == low { first += 1 }
        var last = high.isFinite ? high.rounded(.down) : first + 1_000_000
        if upperStrict && last == high { last -= 1 }
        if kind != "real", first <= last, abs(first) < 9e15, abs(last) < 9e15 {
            let span = UInt64(last - first) + 1
            let offset = distinct.map { UInt64($0) % span } ?? random.next() % span
            return (Int64(first) + Int64(offset)).databaseValue
        }
        let from = low.isFinite ? low : (high.isFinite ? high - 1_000_000 : 0)
        let to = high.isFinite ? high : from + 1_000_000
        let fraction = distinct.map { Double($0 % 1_000_000 + 1) / 1_000_002 } ?? (0.001 + random.unit() * 0.998)
        return (from + (to - from) * fraction).databaseValue
    }

    /// Text that matches the pattern and the lengths, built around `value`'s text.
    private func text(_ value: DatabaseValue, distinct: Int?, random: inout SeededRandom) -> String {
        var filler: String =
            switch value.storage {
            case .string(let text): text
            case .int64(let integer): String(integer)
            case .double(let real): String(real)
            default: ""
            }
        if let distinct, !filler.hasPrefix(String(distinct, radix: 36)) {
            filler = String(distinct, radix: 36) + " " + filler
        }
        var result: String
        if let glob {
            result = Self.expand(
                glob, any: "*", one: "?", sets: true, filler: filler, distinct: distinct, random: &random)
        } else if let like {
            result = Self.expand(
                like, any: "%", one: "_", sets: false, filler: filler, distinct: distinct, random: &random)
        } else {
            result = filler
        }
        if let maxLength, result.count > maxLength {
            result = String(result.prefix(max(maxLength, 0)))
            if let distinct, glob == nil, like == nil, maxLength > 0 {
                // Too short for the number and a word: the number alone, in base 36, left-padded.
                let code = String(distinct, radix: 36)
                result =
                    String(repeating: "0", count: max(0, min(maxLength, minLength ?? 0) - code.count))
                    + code.suffix(maxLength)
            }
        }
        if let minLength, result.count < minLength {
            result += String(repeating: "x", count: minLength - result.count)
        }
        if !excluded.isEmpty {
            result = String(result.map { excluded.contains($0) ? (excluded.contains("-") ? "x" : "-") : $0 })
        }
        switch caseFunction {
        case "lower": result = result.lowercased()
        case "upper": result = result.uppercased()
        case "trim": result = result.trimmingCharacters(in: .whitespaces)
        default: break
        }
        return result
    }

    /// A string `pattern` matches: `any` becomes the filler, `one` a letter, a `[set]` one of its
    /// characters; when there is no `any` to hold a distinct number, its digits vary the letters.
    static func expand(
        _ pattern: String, any: Character, one: Character, sets: Bool, filler: String, distinct: Int?,
        random: inout SeededRandom
    ) -> String {
        let characters = Array(pattern)
        let holdsFiller = characters.contains(any)
        var choices: [[Character]] = []
        var index = 0
        while index < characters.count {
            let c = characters[index]
            if c == any {
                choices.append([])  // the filler
            } else if c == one {
                choices.append(Array("abcdefghijklmnopqrstuvwxyz"))
            } else if sets && c == "[", let close = characters[(index + 1)...].dropFirst().firstIndex(of: "]") {
                choices.append(set(Array(characters[(index + 1)..<close])))
                index = close
            } else {
                choices.append([c])
            }
            index += 1
        }
        var digits = holdsFiller ? 0 : (distinct ?? 0)
        var result = ""
        var usedFiller = false
        for choice in choices.reversed() {
            if choice.isEmpty {
                result = (usedFiller ? "" : filler) + result
                usedFiller = true
            } else if choice.count == 1 {
                result = String(choice[0]) + result
            } else {
                let pick =
                    holdsFiller || distinct == nil ? Int(random.next() % UInt64(choice.count)) : digits % choice.count
                digits /= choice.count
                result = String(choice[pick]) + result
            }
        }
        return result
    }

    /// The characters of a `GLOB` set (`a-z`, `^` negation: a few it leaves out).
    private static func set(_ body: [Character]) -> [Character] {
        var negated = false
        var body = body[...]
        if body.first == "^" { negated = true; body = body.dropFirst() }
        var members: [Character] = []
        var index = body.startIndex
        while index < body.endIndex {
            let c = body[index]
            if index + 2 < body.endIndex, body[index + 1] == "-", let a = c.unicodeScalars.first?.value,
                let b = body[index + 2].unicodeScalars.first?.value, a <= b
            {
                for code in a...min(b, a + 200) {
                    if let scalar = Unicode.Scalar(code) { members.append(Character(scalar)) }
                }
                index += 3
            } else {
                members.append(c)
                index += 1
            }
        }
        if negated { return Array("xqzXQZ0_-.").filter { !members.contains($0) } }
        return members.isEmpty ? ["x"] : members
    }
}

extension DatabaseValue.Storage {
    var isNumeric: Bool {
        switch self {
        case .int64, .double: true
        default: false
        }
    }
}
