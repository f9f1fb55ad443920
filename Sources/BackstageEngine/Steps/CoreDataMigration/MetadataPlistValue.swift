import Foundation

/// One value of a `Z_METADATA` plist, with its plist type kept exact, written by
/// `PropertyListEncoder` rather than `PropertyListSerialization`.
///
/// A statically linked Foundation (`--static-swift-stdlib`, as `make install` and `make perf` build
/// `backstage`) cannot write an array with `PropertyListSerialization`, in any format ("property
/// lists cannot contain objects of type 'Not A Type'"), and every Core Data plist holds one
/// (`NSStoreModelVersionIdentifiers`): a release build failed every Core Data migration. Reading
/// stays `PropertyListSerialization`'s, which tells an integer from a real and from a Boolean.
enum MetadataPlistValue: Encodable, Equatable {
    case boolean(Bool)
    case integer(Int64)
    case real(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case array([MetadataPlistValue])
    case dictionary([String: MetadataPlistValue])

    /// `value` as `PropertyListSerialization` reads it (or a Swift value of a plist type); nil for
    /// anything else (an unsigned integer past `Int64.max`, a key that is not a string).
    init?(_ value: Any) {
        switch value {
        case let value as String: self = .string(value)
        case let value as Data: self = .data(value)
        case let value as Date: self = .date(value)
        case let value as [Any]:
            var elements: [MetadataPlistValue] = []
            for element in value {
                guard let converted = MetadataPlistValue(element) else { return nil }
                elements.append(converted)
            }
            self = .array(elements)
        case let value as [AnyHashable: Any]:
            var entries: [String: MetadataPlistValue] = [:]
            for (key, element) in value {
                guard let key = key.base as? String, let converted = MetadataPlistValue(element) else { return nil }
                entries[key] = converted
            }
            self = .dictionary(entries)
        default:
            // A Boolean reads as a `Bool`; a number as an `NSNumber`, whose type says integer or real
            // (a real of 1.0 is also `as? Bool` and `as? Int`: never ask those first).
            if type(of: value) == Bool.self, let value = value as? Bool {
                self = .boolean(value)
                return
            }
            guard let number = value as? NSNumber else { return nil }
            switch String(cString: number.objCType) {
            case "c", "B": self = .boolean(number.boolValue)
            case "f", "d": self = .real(number.doubleValue)
            case "Q", "L", "I", "S", "C":
                guard number.uint64Value <= UInt64(Int64.max) else { return nil }
                self = .integer(Int64(number.uint64Value))
            default: self = .integer(number.int64Value)
            }
        }
    }

    /// `dictionary` as a binary plist; nil when one of its values is not a plist value.
    static func binary(_ dictionary: [String: Any]) throws -> Data? {
        guard case .dictionary(let entries)? = MetadataPlistValue(dictionary as [AnyHashable: Any]) else { return nil }
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return try encoder.encode(entries)
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: Encoder) throws {
        switch self {
        case .dictionary(let entries):
            var container = encoder.container(keyedBy: Key.self)
            for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
                try container.encode(value, forKey: Key(key))
            }
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .boolean(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .integer(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .real(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .data(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .date(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }
}
