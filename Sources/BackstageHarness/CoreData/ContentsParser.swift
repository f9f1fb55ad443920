import Foundation

/// The ``XMLEventParser`` delegate reading one `.xcdatamodel/contents`: entities with their attributes,
/// relationships, fetch indexes and uniqueness constraints, and configurations. Elements Core Data
/// keeps no storage for (`<elements>` positions, `<userInfo>`, fetch requests, fetched properties)
/// are skipped.
final class ContentsParser: XMLEventDelegate {
    let path: String
    var sawModel = false
    var versionIdentifier: String?
    var entities: [CoreDataEntity] = []
    var configurations: [CoreDataConfiguration] = []
    var error: CoreDataModelError?

    private var entity: CoreDataEntity?
    private var fetchIndex: CoreDataFetchIndex?
    private var constraint: [String]?
    private var configuration: CoreDataConfiguration?

    init(path: String) { self.path = path }

    private func fail(_ reason: CoreDataModelError.Reason, _ parser: XMLEventParser) {
        if error == nil { error = CoreDataModelError(path: path, reason: reason) }
        parser.abortParsing()
    }

    private func required(
        _ attributes: [String: String], _ key: String, of element: String, _ parser: XMLEventParser
    )
        -> String?
    {
        guard let value = attributes[key], !value.isEmpty else {
            fail(.missingAttribute(element: element, attribute: key), parser)
            return nil
        }
        return value
    }

    private func flag(_ attributes: [String: String], _ key: String) -> Bool { attributes[key] == "YES" }

    private func count(
        _ attributes: [String: String], _ key: String, of element: String, _ parser: XMLEventParser
    ) -> Int? {
        guard let text = attributes[key] else { return nil }
        guard let value = Int(text), value >= 0 else {
            fail(.invalidValue(element: element, attribute: key, value: text), parser)
            return nil
        }
        return value
    }

    func parser(
        _ parser: XMLEventParser, didStartElement element: String, attributes: [String: String]
    ) {
        switch element {
        case "model":
            sawModel = true
            versionIdentifier = attributes["userDefinedModelVersionIdentifier"]
        case "entity":
            guard let name = required(attributes, "name", of: element, parser) else { return }
            entity = CoreDataEntity(
                name: name, parentEntity: attributes["parentEntity"], isAbstract: flag(attributes, "isAbstract"),
                representedClassName: attributes["representedClassName"],
                versionHashModifier: attributes["versionHashModifier"],
                renamingIdentifier: attributes["elementID"] ?? attributes["renamingIdentifier"])
        case "attribute" where entity != nil:
            guard let name = required(attributes, "name", of: element, parser) else { return }
            let typeName = attributes["attributeType"] ?? "Undefined"
            guard let type = CoreDataAttributeType(rawValue: typeName) else {
                return fail(.invalidValue(element: element, attribute: "attributeType", value: typeName), parser)
            }
            entity?.attributes.append(
                CoreDataAttribute(
                    name: name, attributeType: type, isOptional: flag(attributes, "optional"),
                    defaultValueString: attributes["defaultValueString"],
                    allowsExternalBinaryDataStorage: flag(attributes, "allowsExternalBinaryDataStorage"),
                    renamingIdentifier: attributes["elementID"] ?? attributes["renamingIdentifier"],
                    versionHashModifier: attributes["versionHashModifier"], isDerived: flag(attributes, "derived"),
                    isTransient: flag(attributes, "transient"), isIndexed: flag(attributes, "indexed")))
        case "relationship" where entity != nil:
            guard let name = required(attributes, "name", of: element, parser),
                let destination = required(attributes, "destinationEntity", of: element, parser)
            else { return }
            let ruleName = attributes["deletionRule"] ?? "Nullify"
            guard let rule = CoreDataDeletionRule(rawValue: ruleName) else {
                return fail(.invalidValue(element: element, attribute: "deletionRule", value: ruleName), parser)
            }
            let minCount = count(attributes, "minCount", of: element, parser)
            let maxCount = count(attributes, "maxCount", of: element, parser)
            guard error == nil else { return }
            entity?.relationships.append(
                CoreDataRelationship(
                    name: name, destinationEntity: destination, inverseName: attributes["inverseName"],
                    inverseEntity: attributes["inverseEntity"], isToMany: flag(attributes, "toMany"),
                    isOrdered: flag(attributes, "ordered"), isOptional: flag(attributes, "optional"),
                    isTransient: flag(attributes, "transient"), deletionRule: rule, minCount: minCount,
                    maxCount: maxCount, renamingIdentifier: attributes["elementID"] ?? attributes["renamingIdentifier"],
                    versionHashModifier: attributes["versionHashModifier"]))
        case "fetchIndex" where entity != nil:
            guard let name = required(attributes, "name", of: element, parser) else { return }
            fetchIndex = CoreDataFetchIndex(
                name: name, elements: [], partialIndexExpression: attributes["partialIndexExpression"])
        case "fetchIndexElement" where fetchIndex != nil:
            guard let property = attributes["property"] ?? attributes["expression"], !property.isEmpty else {
                return fail(.missingAttribute(element: element, attribute: "property"), parser)
            }
            let order = attributes["order"] ?? "ascending"
            guard order == "ascending" || order == "descending" else {
                return fail(.invalidValue(element: element, attribute: "order", value: order), parser)
            }
            fetchIndex?.elements.append(
                .init(property: property, type: attributes["type"] ?? "Binary", isAscending: order == "ascending"))
        case "uniquenessConstraint" where entity != nil:
            constraint = []
        case "constraint" where constraint != nil:
            guard let value = required(attributes, "value", of: element, parser) else { return }
            constraint?.append(value)
        case "configuration":
            guard let name = required(attributes, "name", of: element, parser) else { return }
            configuration = CoreDataConfiguration(
                name: name, memberEntities: [], usedWithCloudKit: flag(attributes, "usedWithCloudKit"))
        case "memberEntity" where configuration != nil:
            guard let name = required(attributes, "name", of: element, parser) else { return }
            configuration?.memberEntities.append(name)
        default:
            break
        }
    }

    func parser(_ parser: XMLEventParser, didEndElement element: String) {
        switch element {
        case "entity":
            if let entity { entities.append(entity) }
            entity = nil
        case "fetchIndex":
            if let fetchIndex { entity?.fetchIndexes.append(fetchIndex) }
            fetchIndex = nil
        case "uniquenessConstraint":
            if let constraint, !constraint.isEmpty { entity?.uniquenessConstraints.append(constraint) }
            constraint = nil
        case "configuration":
            if let configuration { configurations.append(configuration) }
            configuration = nil
        default:
            break
        }
    }
}
