import Foundation

/// Decodes the JSON files users write (plans, catalogs, schemas, data checks) strictly: a syntax
/// error is reported at its line and column, a key written twice or a key the format does not
/// have (`"stratgy"`, a top-level `"verison"`) is refused naming its JSON path, and a value of the
/// wrong kind names its path too. A file that decodes is a file whose every key means something.
package enum StrictDecoding {
    /// Decodes `type` from `data`.
    ///
    /// - throws: ``JSONProblem`` naming the line and column or the JSON path of the mistake.
    package static func decode<T: Codable>(_ type: T.Type, from data: Data) throws(JSONProblem) -> T {
        let document = try JSONDocument(parsing: data)
        return try decode(type, from: data, document: document)
    }

    /// Decodes `type` from `data`, already parsed as `document`.
    package static func decode<T: Codable>(
        _ type: T.Type, from data: Data, document: JSONDocument
    ) throws(JSONProblem)
        -> T
    {
        let value: T
        do {
            value = try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw JSONProblem(explain(error))
        } catch {
            throw JSONProblem("\(error)")
        }
        // Every key the file has must survive a round trip through the type: one that does not is
        // one the type does not know. (A key set to null means "absent", as a decoder reads it.)
        if let encoded = try? JSONEncoder().encode(value), let known = try? JSONDocument(parsing: encoded),
            let unknown = firstUnknownKey(in: document, known: known, path: [])
        {
            let place = unknown.path.isEmpty ? "at the top level" : "in \(path(unknown.path))"
            let (line, column) = JSONDocument.lineAndColumn(of: unknown.member.offset, in: data)
            throw JSONProblem(
                "unknown key \"\(unknown.member.key)\" \(place) (line \(line), column \(column)): correct its spelling or remove it"
            )
        }
        return value
    }

    /// A JSON path as users read it: `steps[0].relocate.strategy`.
    package static func path(_ components: [String]) -> String {
        components.reduce("") { path, component in
            if component.hasPrefix("[") { return path + component }
            let plain = !component.isEmpty && component.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
            let key = plain ? component : "[\"\(component)\"]"
            return path.isEmpty || !plain ? path + key : path + "." + key
        }
    }

    private static func firstUnknownKey(
        in document: JSONDocument, known: JSONDocument, path: [String]
    )
        -> (member: JSONDocument.Member, path: [String])?
    {
        switch (document, known) {
        case (.object(let members), .object(let knownMembers)):
            let values = Dictionary(knownMembers.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
            for member in members {
                if let value = values[member.key] {
                    if let found = firstUnknownKey(in: member.value, known: value, path: path + [member.key]) {
                        return found
                    }
                } else if member.value != .null {
                    return (member, path)
                }
            }
        case (.array(let elements), .array(let knownElements)) where elements.count == knownElements.count:
            for (index, (element, knownElement)) in zip(elements, knownElements).enumerated() {
                if let found = firstUnknownKey(in: element, known: knownElement, path: path + ["[\(index)]"]) {
                    return found
                }
            }
        default:
            break
        }
        return nil
    }

    /// One sentence for a decoding error, naming the JSON path.
    private static func explain(_ error: DecodingError) -> String {
        func components(_ codingPath: [CodingKey]) -> [String] {
            codingPath.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
        }
        func at(_ codingPath: [CodingKey]) -> String {
            codingPath.isEmpty ? "the top level" : path(components(codingPath))
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(at(context.codingPath)) has no \"\(key.stringValue)\", which it needs"
        case .valueNotFound(let type, let context):
            return "\(at(context.codingPath)) is null where \(kind(of: type)) is needed"
        case .typeMismatch(let type, let context):
            return "\(at(context.codingPath)) is not \(kind(of: type))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? context.debugDescription : "\(at(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    private static func kind(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt64.Type: "a whole number"
        case is Double.Type, is Float.Type: "a number"
        case is [Any].Type: "an array"
        default: String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}
