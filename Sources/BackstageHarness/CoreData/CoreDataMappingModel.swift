import Foundation

/// An Xcode mapping model (`Name.xcmappingmodel`, its `xcmapping.xml`) as far as lint needs it:
/// the model versions it maps from and to, and per entity mapping its source and destination
/// entities, the properties it gives value expressions for and its custom migration policy.
///
/// Xcode records the source and destination models by their path in the project
/// (`sourcemodelpath`) when it can; ``sourceVersion`` is that path's last folder without
/// `.xcdatamodel`. Without a path the versions are told by the entity names only
/// (``versions(in:)``): the entity version hashes it also records are not reproducible.
public struct CoreDataMappingModel: Sendable, Hashable {
    /// One entity mapping (`PostToPost`).
    public struct EntityMapping: Sendable, Hashable {
        /// The mapping's source entity; nil when it adds objects without a source.
        public var sourceEntity: String?
        /// The mapping's destination entity; nil when it removes the source's objects.
        public var destinationEntity: String?
        /// `Undefined`, `Copy`, `Add`, `Remove`, `Transform` or `Custom`, as Xcode writes it.
        public var mappingType: String?
        /// `entityMigrationPolicyClassName`: an `NSEntityMigrationPolicy` subclass of the app's.
        public var migrationPolicyClassName: String?
        /// The destination attributes and relationships it has a mapping for.
        public var properties: [String]
        /// The value expressions Xcode stored, by destination property (a property mapping without
        /// one takes the source property of the same name).
        public var valueExpressions: [String: CoreDataValueExpression] = [:]
    }

    /// The folder's name without `.xcmappingmodel`.
    public var name: String
    /// The source model version, from `sourcemodelpath`; nil when the file does not say.
    public var sourceVersion: String?
    /// The destination model version, from `destinationmodelpath`; nil when the file does not say.
    public var destinationVersion: String?
    /// Its entity mappings, in file order.
    public var entityMappings: [EntityMapping]

    /// Why a mapping model cannot be read.
    public struct ReadError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The mapping model's path.
        public var path: String
        /// What is wrong with it.
        public var reason: String

        public var description: String { "cannot read the mapping model \(path): \(reason)" }
    }

    /// Reads the mapping model folder at `url` (or its `xcmapping.xml`).
    public static func read(_ url: URL) throws -> CoreDataMappingModel {
        let file = url.pathExtension == "xml" ? url : url.appending(path: "xcmapping.xml")
        let folder = url.pathExtension == "xml" ? url.deletingLastPathComponent() : url
        let data: Data
        do { data = try Data(contentsOf: file) } catch {
            throw ReadError(path: file.path, reason: "\(error.localizedDescription)")
        }
        let reader = ObjectReader()
        let parser = XMLEventParser(data: data)
        parser.delegate = reader
        guard parser.parse() else {
            throw ReadError(
                path: file.path, reason: "not XML (\(parser.parserError.map { "\($0)" } ?? "unreadable"))")
        }
        let objects = reader.objects
        guard let model = objects.first(where: { $0.type == "XDDEVMAPPINGMODEL" }) else {
            throw ReadError(path: file.path, reason: "it holds no mapping model object (XDDEVMAPPINGMODEL)")
        }
        func version(_ path: String?) -> String? {
            guard let path, !path.isEmpty else { return nil }
            let last = URL(filePath: path).lastPathComponent
            return last.hasSuffix(".xcdatamodel") ? String(last.dropLast(".xcdatamodel".count)) : nil
        }
        let byID = Dictionary(objects.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let mappingIDs =
            model.relationships["entitymappings"]
            ?? objects.filter { $0.type == "XDDEVENTITYMAPPING" }.map(\.id)
        let mappings = mappingIDs.compactMap { byID[$0] }.map { object in
            let propertyIDs =
                (object.relationships["attributemappings"] ?? [])
                + (object.relationships["relationshipmappings"] ?? [])
            return EntityMapping(
                sourceEntity: object.attributes["sourcename"], destinationEntity: object.attributes["destinationname"],
                mappingType: object.attributes["mappingtypename"],
                migrationPolicyClassName: object.attributes["migrationpolicyclassname"].flatMap {
                    $0.isEmpty ? nil : $0
                },
                properties: propertyIDs.compactMap { byID[$0]?.attributes["name"] }.sorted(),
                valueExpressions: Dictionary(
                    propertyIDs.compactMap { id -> (String, CoreDataValueExpression)? in
                        guard let property = byID[id], let name = property.attributes["name"],
                            let encoded = property.attributes["valueexpressiondata"], !encoded.isEmpty
                        else { return nil }
                        return (
                            name,
                            CoreDataValueExpression(
                                archived: Data(base64Encoded: encoded, options: .ignoreUnknownCharacters))
                        )
                    }, uniquingKeysWith: { a, _ in a }))
        }
        return CoreDataMappingModel(
            name: folder.deletingPathExtension().lastPathComponent,
            sourceVersion: version(model.attributes["sourcemodelpath"]),
            destinationVersion: version(model.attributes["destinationmodelpath"]), entityMappings: mappings)
    }

    /// The consecutive pairs of `model`'s versions this mapping model maps: the one its paths name
    /// when they name versions of `model`; else every pair whose source has each mapping's source
    /// entity and whose destination has each destination entity (several when the names cannot
    /// tell them apart, none when no pair fits).
    public func versions(in model: CoreDataModel) -> [(source: String, destination: String)] {
        let pairs = zip(model.versions, model.versions.dropFirst()).map { ($0, $1) }
        if let sourceVersion, let destinationVersion,
            pairs.contains(where: { $0.0.name == sourceVersion && $0.1.name == destinationVersion })
        {
            return [(sourceVersion, destinationVersion)]
        }
        return pairs.filter { source, destination in
            entityMappings.allSatisfy { mapping in
                (mapping.sourceEntity.map { source.entity(named: $0) != nil } ?? true)
                    && (mapping.destinationEntity.map { destination.entity(named: $0) != nil } ?? true)
            }
        }.map { ($0.name, $1.name) }
    }

    /// The entity mappings that run the app's own code: they need the developer's SQL.
    public var customPolicies: [EntityMapping] { entityMappings.filter { $0.migrationPolicyClassName != nil } }
}

/// Reads `<object type id>` elements with their `<attribute name>` values and `<relationship idrefs>`.
private final class ObjectReader: XMLEventDelegate {
    struct Object {
        var type: String
        var id: String
        var attributes: [String: String] = [:]
        var relationships: [String: [String]] = [:]
    }

    var objects: [Object] = []
    private var current: Object?
    private var attribute: String?
    private var text = ""

    func parser(
        _ parser: XMLEventParser, didStartElement elementName: String, attributes: [String: String]
    ) {
        switch elementName {
        case "object":
            current = Object(type: attributes["type"] ?? "", id: attributes["id"] ?? "")
        case "attribute" where current != nil:
            attribute = attributes["name"]
            text = ""
        case "relationship" where current != nil:
            if let name = attributes["name"] {
                current?.relationships[name] = (attributes["idrefs"] ?? "").split(separator: " ").map(String.init)
            }
        default: break
        }
    }

    func parser(_ parser: XMLEventParser, foundCharacters string: String) {
        if attribute != nil { text += string }
    }

    func parser(_ parser: XMLEventParser, didEndElement elementName: String) {
        switch elementName {
        case "attribute":
            if let attribute { current?.attributes[attribute] = text.trimmingCharacters(in: .whitespacesAndNewlines) }
            attribute = nil
        case "object":
            if let current { objects.append(current) }
            current = nil
        default: break
        }
    }
}
