import Foundation

/// What ``XMLEventParser`` calls as it reads a document.
protocol XMLEventDelegate: AnyObject {
    func parser(_ parser: XMLEventParser, didStartElement element: String, attributes: [String: String])
    func parser(_ parser: XMLEventParser, didEndElement element: String)
    func parser(_ parser: XMLEventParser, foundCharacters string: String)
}

extension XMLEventDelegate {
    func parser(_ parser: XMLEventParser, foundCharacters string: String) {}
}

/// A reader of the XML that Xcode writes for Core Data (a model's `contents`, a mapping model's
/// `xcmapping.xml`): elements, attributes, text, character and predefined entity references,
/// CDATA, comments, processing instructions and a DOCTYPE (skipped, its internal subset too). It
/// checks that the document is well formed — one root element, every tag closed in order, no
/// attribute twice, no `<` or unknown entity where it cannot be — and reads nothing from outside
/// the document: no external entity, no DTD.
///
/// It replaces Foundation's `XMLParser`, whose FoundationXML links libxml2 and, through it, ICU
/// into every process of the binaries that read models (`backstage`, the simulator's child): a
/// millisecond of each start warm, tens of milliseconds cold, for the few commands that read one.
final class XMLEventParser {
    /// Why a document is not well formed, and the line where that was found.
    struct Malformed: Error, CustomStringConvertible {
        var reason: String
        var line: Int
        var description: String { "\(reason) (line \(line))" }
    }

    weak var delegate: XMLEventDelegate?
    /// Why ``parse()`` returned false, unless the delegate aborted it.
    private(set) var parserError: Malformed?
    /// The line being read (from 1).
    private(set) var lineNumber = 1

    private let bytes: [UInt8]
    private var index = 0
    private var aborted = false

    /// The document `data`; its line ends (CR LF, CR) read as LF, as XML reads them, before anything else.
    init(data: Data) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count)
        var afterCR = false
        for byte in data {
            if byte == 0x0D {
                bytes.append(0x0A)
                afterCR = true
            } else {
                if !(afterCR && byte == 0x0A) { bytes.append(byte) }
                afterCR = false
            }
        }
        self.bytes = bytes
    }

    /// Stops the parse after the delegate's call returns: ``parse()`` returns false.
    func abortParsing() { aborted = true }

    /// Reads the whole document, calling the delegate; false when it is not well formed (see
    /// ``parserError``) or the delegate aborted.
    func parse() -> Bool {
        do {
            try document()
            return !aborted
        } catch let error as Malformed {
            parserError = error
            return false
        } catch {
            return false
        }
    }

    private struct Aborted: Error {}

    private func fail(_ reason: String) -> Malformed { Malformed(reason: reason, line: lineNumber) }

    private func check() throws { if aborted { throw Aborted() } }

    private func document() throws {
        try checkEncoding()
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        var open: [String] = []
        var sawRoot = false
        var text: [UInt8] = []
        func flushText() throws {
            guard !text.isEmpty else { return }
            defer { text.removeAll(keepingCapacity: true) }
            if open.isEmpty {
                guard text.allSatisfy(Self.isSpace) else { throw fail("text outside the root element") }
                return
            }
            delegate?.parser(self, foundCharacters: String(decoding: text, as: UTF8.self))
            try check()
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "<") {
                if starts(with: "<!--") {
                    try flushText()
                    index += 4
                    try skip(past: "-->", what: "a comment")
                } else if starts(with: "<![CDATA[") {
                    guard !open.isEmpty else { throw fail("CDATA outside the root element") }
                    index += 9
                    let start = index
                    try skip(past: "]]>", what: "a CDATA section")
                    text += bytes[start..<(index - 3)]
                } else if starts(with: "<?") {
                    try flushText()
                    index += 2
                    try skip(past: "?>", what: "a processing instruction")
                } else if starts(with: "<!DOCTYPE") {
                    guard !sawRoot else { throw fail("a DOCTYPE after the root element") }
                    try flushText()
                    try doctype()
                } else if starts(with: "</") {
                    try flushText()
                    index += 2
                    let name = try self.name()
                    skipSpace()
                    try expect(">")
                    guard let last = open.popLast() else { throw fail("</\(name)> closes no element") }
                    guard last == name else { throw fail("</\(name)> where </\(last)> was expected") }
                    delegate?.parser(self, didEndElement: name)
                    try check()
                } else {
                    try flushText()
                    guard !(open.isEmpty && sawRoot) else { throw fail("a second root element") }
                    index += 1
                    let name = try self.name()
                    let (attributes, closed) = try self.attributes(of: name)
                    sawRoot = true
                    delegate?.parser(self, didStartElement: name, attributes: attributes)
                    try check()
                    if closed {
                        delegate?.parser(self, didEndElement: name)
                        try check()
                    } else {
                        open.append(name)
                    }
                }
            } else if byte == UInt8(ascii: "&") {
                text += try reference()
            } else {
                if byte == UInt8(ascii: "\n") { lineNumber += 1 }
                text.append(byte)
                index += 1
            }
        }
        try flushText()
        if let last = open.last { throw fail("the document ends inside <\(last)>") }
        guard sawRoot else { throw fail("the document has no element") }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"),
            UInt8(ascii: ":"), 0x80...0xFF:
            true
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."): !first
        default: false
        }
    }

    private func starts(with literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return literal.withUTF8Buffer { buffer in
            (0..<count).allSatisfy { bytes[index + $0] == buffer[$0] }
        }
    }

    /// Moves past the next `end`, counting lines.
    private func skip(past end: StaticString, what: String) throws {
        while index < bytes.count {
            if starts(with: end) {
                index += end.utf8CodeUnitCount
                return
            }
            if bytes[index] == UInt8(ascii: "\n") { lineNumber += 1 }
            index += 1
        }
        throw fail("\(what) is not closed")
    }

    private func skipSpace() {
        while index < bytes.count, Self.isSpace(bytes[index]) {
            if bytes[index] == UInt8(ascii: "\n") { lineNumber += 1 }
            index += 1
        }
    }

    private func expect(_ character: Unicode.Scalar) throws {
        guard index < bytes.count, bytes[index] == UInt8(ascii: character) else {
            throw fail("\"\(character)\" expected")
        }
        index += 1
    }

    private func name() throws -> String {
        let start = index
        while index < bytes.count, Self.isNameByte(bytes[index], first: index == start) { index += 1 }
        guard index > start else { throw fail("a name expected") }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// The attributes after an element's name, through its `>` or `/>` (true).
    private func attributes(of element: String) throws -> ([String: String], Bool) {
        var attributes: [String: String] = [:]
        while true {
            let spaced = index < bytes.count && Self.isSpace(bytes[index])
            skipSpace()
            guard index < bytes.count else { throw fail("<\(element) is not closed") }
            if bytes[index] == UInt8(ascii: ">") {
                index += 1
                return (attributes, false)
            }
            if starts(with: "/>") {
                index += 2
                return (attributes, true)
            }
            guard spaced else { throw fail("a space expected between the attributes of <\(element)>") }
            let name = try self.name()
            skipSpace()
            try expect("=")
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'")
            else { throw fail("the value of \(name) in <\(element)> is not quoted") }
            let quote = bytes[index]
            index += 1
            var value: [UInt8] = []
            while true {
                guard index < bytes.count else { throw fail("the value of \(name) in <\(element)> is not closed") }
                let byte = bytes[index]
                if byte == quote {
                    index += 1
                    break
                }
                switch byte {
                case UInt8(ascii: "<"): throw fail("\"<\" in the value of \(name) in <\(element)>")
                case UInt8(ascii: "&"): value += try reference()
                case 0x09, 0x0A:
                    // Attribute-value normalization: each white space character reads as a space.
                    if byte == 0x0A { lineNumber += 1 }
                    value.append(0x20)
                    index += 1
                default:
                    value.append(byte)
                    index += 1
                }
            }
            guard attributes[name] == nil else { throw fail("\(name) given twice in <\(element)>") }
            attributes[name] = String(decoding: value, as: UTF8.self)
        }
    }

    /// The bytes of the entity or character reference at `&`.
    private func reference() throws -> [UInt8] {
        let start = index
        index += 1
        while index < bytes.count, bytes[index] != UInt8(ascii: ";"), index - start < 12 { index += 1 }
        guard index < bytes.count, bytes[index] == UInt8(ascii: ";") else { throw fail("\"&\" starts no reference") }
        let body = String(decoding: bytes[(start + 1)..<index], as: UTF8.self)
        index += 1
        switch body {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default:
            // Digits only (no sign), of a character XML allows.
            let hex = body.hasPrefix("#x")
            let digits = body.dropFirst(hex ? 2 : 1)
            let decimal: (Character) -> Bool = { ("0"..."9").contains($0) }
            let number: UInt32? =
                body.hasPrefix("#") && !digits.isEmpty && digits.allSatisfy(hex ? \.isHexDigit : decimal)
                ? UInt32(digits, radix: hex ? 16 : 10) : nil
            guard let number, Self.isCharacter(number), let scalar = Unicode.Scalar(number) else {
                throw fail("&\(body); is not a reference this reader knows")
            }
            return Array(String(Character(scalar)).utf8)
        }
    }

    /// A code point XML's `Char` allows (tab, line feed, carriage return, and from the space up,
    /// but for surrogates and U+FFFE, U+FFFF).
    private static func isCharacter(_ value: UInt32) -> Bool {
        switch value {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }

    /// Refuses a document this reader would misread: one in UTF-16 or UTF-32 (by its byte order
    /// mark), one declaring another encoding than UTF-8, bytes that are not UTF-8, a control
    /// character XML does not allow.
    private func checkEncoding() throws {
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE])
            || bytes.starts(with: [0x00, 0x00, 0xFE, 0xFF])
        {
            throw fail("it is UTF-16 or UTF-32 (its byte order mark); this reader reads UTF-8, as Xcode writes")
        }
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        if bytes[start...].starts(with: Array("<?xml".utf8)),
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ">"))
        {
            let declaration = String(decoding: bytes[start..<end], as: UTF8.self)
            if let range = declaration.range(of: #"encoding\s*=\s*["'][^"']*["']"#, options: .regularExpression) {
                let encoding =
                    declaration[range].split(whereSeparator: { $0 == "\"" || $0 == "'" }).dropFirst().first.map(
                        String.init) ?? ""
                guard ["utf-8", "utf8", "us-ascii"].contains(encoding.lowercased()) else {
                    throw fail("it declares the encoding \(encoding); this reader reads UTF-8, as Xcode writes")
                }
            }
        }
        guard String(validating: bytes, as: UTF8.self) != nil else { throw fail("it is not UTF-8") }
        var line = 1
        for byte in bytes {
            if byte == 0x0A { line += 1 }
            if byte < 0x20 && byte != 0x09 && byte != 0x0A {
                throw Malformed(
                    reason: "a control character (\(byte) as a byte value), which XML does not allow", line: line)
            }
        }
    }

    /// Skips `<!DOCTYPE …>` with its internal subset (`[…]`), quoted strings and comments.
    private func doctype() throws {
        index += 9
        var depth = 0
        while index < bytes.count {
            if starts(with: "<!--") {
                index += 4
                try skip(past: "-->", what: "a comment")
                continue
            }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                index += 1
                while index < bytes.count, bytes[index] != byte {
                    if bytes[index] == UInt8(ascii: "\n") { lineNumber += 1 }
                    index += 1
                }
            case UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: ">") where depth == 0:
                index += 1
                return
            case UInt8(ascii: "\n"): lineNumber += 1
            default: break
            }
            index += 1
        }
        throw fail("the DOCTYPE is not closed")
    }
}
