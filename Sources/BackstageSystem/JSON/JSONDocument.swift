import Foundation

/// A JSON document parsed for checking, not for values: its structure, each key with the line and
/// column where it is written, so a mistake is reported where the user made it.
///
/// Stricter than `JSONSerialization`: a key written twice in one object is refused (a decoder
/// keeps one silently), and the first syntax error is reported at its line and column, with
/// "ends early" for a truncated file.
package indirect enum JSONDocument: Sendable, Hashable {
    /// One key of an object, and the byte offset where it is written (see
    /// ``lineAndColumn(of:in:)``).
    package struct Member: Sendable, Hashable {
        package var key: String
        package var value: JSONDocument
        package var offset: Int
    }

    case object([Member])
    case array([JSONDocument])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    /// Parses `data`.
    ///
    /// - throws: ``JSONProblem`` naming the line and column of the first syntax error.
    package init(parsing data: Data) throws(JSONProblem) {
        var parser = JSONParser(bytes: Array(data))
        self = try parser.document()
    }

    /// The line and column (both from 1; the column counts characters) of byte `offset` of `data`.
    package static func lineAndColumn(of offset: Int, in data: Data) -> (line: Int, column: Int) {
        JSONParser(bytes: Array(data)).lineAndColumn(offset)
    }

    /// The value of `key` when this is an object that has it.
    package subscript(key: String) -> JSONDocument? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }
}

/// What is wrong with a JSON document, in one sentence that does not name the file (the caller
/// does: "FILE is not a valid upgrade plan: …").
package struct JSONProblem: Error, Sendable, Hashable, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}

/// A recursive-descent JSON parser (RFC 8259) that keeps where each key is written.
private struct JSONParser {
    let bytes: [UInt8]
    var offset = 0
    var depth = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func document() throws(JSONProblem) -> JSONDocument {
        skipSpace()
        guard offset < bytes.count else { throw JSONProblem("the file is empty: it holds no JSON value") }
        let value = try self.value()
        skipSpace()
        guard offset == bytes.count else { throw unexpected("the end of the file after the JSON value") }
        return value
    }

    private mutating func value() throws(JSONProblem) -> JSONDocument {
        guard offset < bytes.count else { throw unexpected("a value") }
        switch bytes[offset] {
        case UInt8(ascii: "{"):
            return try nested { (parser: inout JSONParser) throws(JSONProblem) in try parser.object() }
        case UInt8(ascii: "["):
            return try nested { (parser: inout JSONParser) throws(JSONProblem) in try parser.array() }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw unexpected("a value (an object, an array, a string, a number, true, false or null)")
        }
    }

    private mutating func nested(
        _ body: (inout JSONParser) throws(JSONProblem) -> JSONDocument
    ) throws(JSONProblem)
        -> JSONDocument
    {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 256 else { throw JSONProblem("values are nested more than 256 deep at \(position(offset))") }
        return try body(&self)
    }

    private mutating func object() throws(JSONProblem) -> JSONDocument {
        offset += 1
        var members: [JSONDocument.Member] = []
        var keys: Set<String> = []
        skipSpace()
        if peek(UInt8(ascii: "}")) {
            offset += 1
            return .object(members)
        }
        while true {
            skipSpace()
            let start = offset
            guard peek(UInt8(ascii: "\"")) else { throw unexpected("a key in double quotes") }
            let key = try string()
            guard keys.insert(key).inserted else {
                throw JSONProblem("the key \"\(key)\" is written twice in one object (again at \(position(start)))")
            }
            skipSpace()
            guard peek(UInt8(ascii: ":")) else { throw unexpected("':' after the key \"\(key)\"") }
            offset += 1
            skipSpace()
            members.append(.init(key: key, value: try value(), offset: start))
            skipSpace()
            if peek(UInt8(ascii: ",")) {
                offset += 1
                continue
            }
            if peek(UInt8(ascii: "}")) {
                offset += 1
                return .object(members)
            }
            throw unexpected("',' or '}'")
        }
    }

    private mutating func array() throws(JSONProblem) -> JSONDocument {
        offset += 1
        var elements: [JSONDocument] = []
        skipSpace()
        if peek(UInt8(ascii: "]")) {
            offset += 1
            return .array(elements)
        }
        while true {
            skipSpace()
            elements.append(try value())
            skipSpace()
            if peek(UInt8(ascii: ",")) {
                offset += 1
                continue
            }
            if peek(UInt8(ascii: "]")) {
                offset += 1
                return .array(elements)
            }
            throw unexpected("',' or ']'")
        }
    }

    private mutating func string() throws(JSONProblem) -> String {
        offset += 1
        var text: [UInt8] = []
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                guard let string = String(validating: text, as: UTF8.self) else {
                    throw JSONProblem("a string that is not valid UTF-8 ends at \(position(offset - 1))")
                }
                return string
            case UInt8(ascii: "\\"):
                try escape(into: &text)
            case 0..<0x20:
                throw unexpected("the end of the string (a control character must be escaped)")
            default:
                text.append(byte)
                offset += 1
            }
        }
        throw unexpected("the closing '\"' of the string")
    }

    private mutating func escape(into text: inout [UInt8]) throws(JSONProblem) {
        offset += 1
        guard offset < bytes.count else { throw unexpected("an escaped character") }
        let simple: [UInt8: UInt8] = [
            UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F, UInt8(ascii: "b"): 0x08,
            UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
        ]
        if let byte = simple[bytes[offset]] {
            text.append(byte)
            offset += 1
            return
        }
        guard bytes[offset] == UInt8(ascii: "u") else {
            throw unexpected("an escape: \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX")
        }
        offset += 1
        var scalar = try hex4()
        if (0xD800..<0xDC00).contains(scalar), offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"),
            bytes[offset + 1] == UInt8(ascii: "u")
        {
            offset += 2
            let low = try hex4()
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low &- 0xDC00)
        }
        text.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8))
    }

    private mutating func hex4() throws(JSONProblem) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard offset < bytes.count, let digit = Character(Unicode.Scalar(bytes[offset])).hexDigitValue else {
                throw unexpected("four hexadecimal digits after \\u")
            }
            value = value * 16 + UInt32(digit)
            offset += 1
        }
        return value
    }

    private mutating func number() throws(JSONProblem) -> String {
        let start = offset
        if peek(UInt8(ascii: "-")) { offset += 1 }
        let first = offset
        let count = digits()
        guard count > 0 else { throw unexpected("a digit") }
        if bytes[first] == UInt8(ascii: "0"), count > 1 {
            throw JSONProblem("a number starts with 0 at \(position(start)): JSON numbers have no leading zeros")
        }
        if peek(UInt8(ascii: ".")) {
            offset += 1
            guard digits() > 0 else { throw unexpected("a digit after the decimal point") }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            offset += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { offset += 1 }
            guard digits() > 0 else { throw unexpected("a digit in the exponent") }
        }
        return String(decoding: bytes[start..<offset], as: UTF8.self)
    }

    private mutating func digits() -> Int {
        let start = offset
        while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1 }
        return offset - start
    }

    private mutating func literal(_ word: String) throws(JSONProblem) {
        for byte in word.utf8 {
            guard peek(byte) else { throw unexpected("\(word)") }
            offset += 1
        }
    }

    private func peek(_ byte: UInt8) -> Bool { offset < bytes.count && bytes[offset] == byte }

    private mutating func skipSpace() {
        while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
    }

    /// The error at the current offset: the file ends early, or a character is not what JSON allows.
    private func unexpected(_ expected: String) -> JSONProblem {
        guard offset < bytes.count else {
            return JSONProblem(
                "the file ends early at \(position(offset)), where JSON needs \(expected): is it truncated?")
        }
        let scalar = Unicode.Scalar(bytes[offset])
        let shown =
            bytes[offset] < 0x20 || bytes[offset] >= 0x7F
            ? String(format: "byte 0x%02X", bytes[offset]) : "'\(Character(scalar))'"
        return JSONProblem("JSON syntax error at \(position(offset)): found \(shown) where JSON needs \(expected)")
    }

    private func position(_ at: Int) -> String {
        let (line, column) = lineAndColumn(at)
        return "line \(line), column \(column)"
    }

    /// Line and column (both from 1; the column counts characters, not bytes) of `at`.
    func lineAndColumn(_ at: Int) -> (Int, Int) {
        var line = 1
        var lineStart = 0
        for index in 0..<min(at, bytes.count) where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        let column = bytes[lineStart..<min(at, bytes.count)].filter { $0 & 0xC0 != 0x80 }.count + 1
        return (line, column)
    }
}
