import Foundation

/// A mapping model's value expression (an archived `NSExpression`), as far as SQL can follow it.
public enum CoreDataValueExpression: Sendable, Hashable, CustomStringConvertible {
    /// `$source.keyPath`: the source object's property (a one-component path names a property).
    case sourceKeyPath(String)
    /// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "Mapping",
    /// $source.keyPath)`: the objects the source's relationship `keyPath` reaches, migrated.
    case migratedRelationship(mapping: String, keyPath: String)
    /// A constant (`nil`, a number or a string).
    case constant(Constant)
    /// Anything else (a function of the app, a subquery...): what it is, by its parts' kinds.
    case unsupported(String)

    /// A constant value of the model (never a row's value).
    public enum Constant: Sendable, Hashable {
        case null
        case integer(Int)
        case real(Double)
        case text(String)
    }

    public var description: String {
        switch self {
        case .sourceKeyPath(let path): "$source.\(path)"
        case .migratedRelationship(let mapping, let path):
            "FUNCTION($manager, destinationInstancesForEntityMappingNamed:sourceInstances:, \(mapping), $source.\(path))"
        case .constant(let constant): "\(constant)"
        case .unsupported(let what): what
        }
    }

    /// Decodes the keyed archive Xcode writes in `valueexpressiondata`.
    init(archived data: Data?) {
        guard let data,
            let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)
                as? [String: Any],
            let objects = plist["$objects"] as? [Any], let top = plist["$top"] as? [String: Any],
            let root = top["root"].flatMap(Self.reference)
        else {
            self = .unsupported("an expression that is not a keyed archive")
            return
        }
        self = Self.decode(root, objects, depth: 0)
    }

    private indirect enum Node {
        case variable(String)
        case keyPath(String)
        case constant(Constant)
        case function(selector: String, operand: Node?, arguments: [Node])
        case other(String)
    }

    private static func decode(_ uid: Int, _ objects: [Any], depth: Int) -> CoreDataValueExpression {
        switch node(uid, objects, depth: depth) {
        case .constant(let constant): return .constant(constant)
        case .function("valueForKeyPath:", .variable("source")?, let arguments):
            if case .keyPath(let path)? = arguments.first, arguments.count == 1 { return .sourceKeyPath(path) }
        case .function(
            "destinationInstancesForEntityMappingNamed:sourceInstances:", .variable("manager")?, let arguments):
            if arguments.count == 2, case .constant(.text(let mapping)) = arguments[0],
                case .function("valueForKeyPath:", .variable("source")?, let inner) = arguments[1],
                case .keyPath(let path)? = inner.first
            {
                return .migratedRelationship(mapping: mapping, keyPath: path)
            }
        default: break
        }
        return .unsupported("an expression of \(describe(node(uid, objects, depth: depth)))")
    }

    private static func describe(_ node: Node) -> String {
        switch node {
        case .variable(let name): "$\(name)"
        case .keyPath(let path): path
        case .constant: "a constant"
        case .function(let selector, let operand, let arguments):
            "\(operand.map(describe) ?? "?").\(selector)(\(arguments.map(describe).joined(separator: ", ")))"
        case .other(let kind): kind
        }
    }

    private static func node(_ uid: Int, _ objects: [Any], depth: Int) -> Node {
        guard depth < 16, uid < objects.count, let object = objects[uid] as? [String: Any] else {
            return .other("an unreadable part")
        }
        let type = object["NSExpressionType"] as? Int
        func string(_ key: String) -> String? {
            object[key].flatMap(reference).flatMap { $0 < objects.count ? objects[$0] as? String : nil }
        }
        switch type {
        case 0:
            guard let value = object["NSConstantValue"].flatMap(reference), value < objects.count else {
                return .constant(.null)
            }
            switch objects[value] {
            case let text as String where text == "$null": return .constant(.null)
            case let text as String: return .constant(.text(text))
            case let number as Int: return .constant(.integer(number))
            case let number as Double: return .constant(.real(number))
            default: return .other("a constant of another kind")
            }
        case 2: return string("NSVariable").map(Node.variable) ?? .other("a variable")
        case 3, 10: return string("NSKeyPath").map(Node.keyPath) ?? .other("a key path")
        case 4:
            let selector = string("NSSelectorName") ?? "?"
            let operand = object["NSOperand"].flatMap(reference).map { node($0, objects, depth: depth + 1) }
            var arguments: [Node] = []
            if let list = object["NSArguments"].flatMap(reference), list < objects.count,
                let array = objects[list] as? [String: Any], let items = array["NS.objects"] as? [Any]
            {
                arguments = items.compactMap(reference).map { node($0, objects, depth: depth + 1) }
            }
            return .function(selector: selector, operand: operand, arguments: arguments)
        default: return .other("an expression of type \(type.map(String.init) ?? "unknown")")
        }
    }

    /// A keyed archive's object reference: Foundation gives a `CF$UID` object whose only field is
    /// its `value`.
    private static func reference(_ any: Any) -> Int? {
        if let dictionary = any as? [String: Any], let value = dictionary["CF$UID"] as? Int { return value }
        for child in Mirror(reflecting: any).children where child.label == "value" {
            if let value = child.value as? UInt32 { return Int(value) }
            if let value = child.value as? Int { return value }
            if let value = child.value as? UInt64 { return Int(value) }
        }
        return nil
    }
}
