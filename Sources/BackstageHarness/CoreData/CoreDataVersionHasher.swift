import Foundation

/// Core Data's entity version hashes (`NSEntityDescription.versionHash`, what `Z_METADATA`'s
/// `NSStoreModelVersionHashes` holds and Core Data compares at launch), computed from the model.
///
/// Each is SHA-256 over: the entity's name, its abstract flag (one byte), its parent's hash, the
/// hashes of its stored properties in name order, its hash modifier; a property's over its name, its
/// optional/transient/read-only flags (two bytes), its hash modifier; an attribute's over that, its
/// `NSAttributeType` (four bytes) and its external-storage flag; a relationship's over that, its
/// destination's name, its inverse's name, its maximum and minimum counts (four bytes each) and its
/// ordered flag. This reproduces every hash of the six stores of `coredata-models/`. Those stores
/// prove attributes, optional flags, to-one and to-many relationships with inverses and the counts
/// of their relationships; an entity that uses anything else (a parent, abstract, a hash modifier, a
/// uniqueness constraint, external storage, an ordered or self-inverse relationship, a derived
/// attribute, property names whose order depends on case) is not hashed: no store proves it.
enum CoreDataVersionHasher {
    /// The hashes of every entity of `version`, or the entities whose hash is not proven.
    static func hashes(of version: CoreDataModelVersion) -> Result<[String: Data], UnprovenEntities> {
        var result: [String: Data] = [:]
        var unproven: [String] = []
        var reasons: [String: String] = [:]
        for entity in version.entities {
            switch hash(of: entity, in: version) {
            case .success(let hash): result[entity.name] = hash
            case .failure(let why):
                unproven.append(entity.name)
                reasons[entity.name] = why.reason
            }
        }
        return unproven.isEmpty ? .success(result) : .failure(UnprovenEntities(entities: unproven, reasons: reasons))
    }

    struct UnprovenEntities: Error {
        var entities: [String]
        /// Entity → what in it no real store proves (`a uniqueness constraint`, `attribute photo:
        /// external binary storage`).
        var reasons: [String: String] = [:]

        /// `Collector (a uniqueness constraint), Specimen (attribute photo: external binary storage)`.
        var explained: String {
            entities.map { name in reasons[name].map { "\(name) (\($0))" } ?? name }.joined(separator: ", ")
        }
    }

    /// Why a hash is not computed: the feature no real store proves.
    struct Unproven: Error { var reason: String }

    private static func hash(of entity: CoreDataEntity, in version: CoreDataModelVersion) -> Result<Data, Unproven> {
        if let parent = entity.parentEntity { return .failure(Unproven(reason: "a sub-entity of \(parent)")) }
        if entity.isAbstract { return .failure(Unproven(reason: "abstract")) }
        if entity.versionHashModifier != nil { return .failure(Unproven(reason: "a version hash modifier")) }
        if !entity.uniquenessConstraints.isEmpty { return .failure(Unproven(reason: "a uniqueness constraint")) }
        var properties: [(name: String, hash: Data)] = []
        for attribute in entity.attributes where !attribute.isTransient {
            switch hash(of: attribute) {
            case .success(let hash): properties.append((attribute.name, hash))
            case .failure(let why): return .failure(Unproven(reason: "attribute \(attribute.name): \(why.reason)"))
            }
        }
        for relationship in entity.relationships where !relationship.isTransient {
            switch hash(of: relationship, in: entity) {
            case .success(let hash): properties.append((relationship.name, hash))
            case .failure(let why):
                return .failure(Unproven(reason: "relationship \(relationship.name): \(why.reason)"))
            }
        }
        let byBytes = properties.map(\.name).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let byCase = properties.map(\.name).sorted { LayoutBuilder.precedes($0, $1) }
        guard byBytes == byCase else { return .failure(Unproven(reason: "property names whose order depends on case")) }
        var sha = SHA256()
        sha.update(Data(entity.name.utf8))
        sha.update(Data([0]))
        for property in properties.sorted(by: { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }) {
            sha.update(property.hash)
        }
        return .success(digest(&sha))
    }

    private static func propertyHash(name: String, isOptional: Bool) -> Data {
        var sha = SHA256()
        sha.update(Data(name.utf8))
        sha.update(littleEndian(UInt16(isOptional ? 1 : 0)))
        return digest(&sha)
    }

    private static func hash(of attribute: CoreDataAttribute) -> Result<Data, Unproven> {
        if attribute.versionHashModifier != nil { return .failure(Unproven(reason: "a version hash modifier")) }
        if attribute.allowsExternalBinaryDataStorage { return .failure(Unproven(reason: "external binary storage")) }
        if attribute.isDerived { return .failure(Unproven(reason: "derived")) }
        guard let type = attributeType(attribute.attributeType) else {
            return .failure(Unproven(reason: "its type \(attribute.attributeType)"))
        }
        var sha = SHA256()
        sha.update(propertyHash(name: attribute.name, isOptional: attribute.isOptional))
        sha.update(littleEndian(UInt32(type)))
        return .success(digest(&sha))
    }

    private static func hash(of relationship: CoreDataRelationship, in entity: CoreDataEntity) -> Result<Data, Unproven>
    {
        if relationship.versionHashModifier != nil { return .failure(Unproven(reason: "a version hash modifier")) }
        if relationship.isOrdered { return .failure(Unproven(reason: "ordered")) }
        guard let inverse = relationship.inverseName else { return .failure(Unproven(reason: "no inverse")) }
        if relationship.destinationEntity == entity.name && inverse == relationship.name {
            return .failure(Unproven(reason: "its own inverse"))
        }
        var sha = SHA256()
        sha.update(propertyHash(name: relationship.name, isOptional: relationship.isOptional))
        sha.update(Data(relationship.destinationEntity.utf8))
        sha.update(Data(inverse.utf8))
        sha.update(littleEndian(UInt32(relationship.maxCount ?? (relationship.isToMany ? 0 : 1))))
        sha.update(littleEndian(UInt32(relationship.minCount ?? 0)))
        return .success(digest(&sha))
    }

    /// `NSAttributeType`'s raw values (public API).
    private static func attributeType(_ type: CoreDataAttributeType) -> Int? {
        switch type {
        case .integer16: 100
        case .integer32: 200
        case .integer64: 300
        case .decimal: 400
        case .double: 500
        case .float: 600
        case .string: 700
        case .boolean: 800
        case .date: 900
        case .binary: 1000
        case .uuid: 1100
        case .uri: 1200
        case .transformable: 1800
        case .objectID, .undefined: nil
        }
    }

    private static func digest(_ sha: inout SHA256) -> Data {
        let hex = Array(sha.finalize().utf8)
        return Data(
            stride(from: 0, to: hex.count, by: 2).map { i in
                func nibble(_ c: UInt8) -> UInt8 { c >= 97 ? c - 87 : c - 48 }
                return nibble(hex[i]) << 4 | nibble(hex[i + 1])
            })
    }

    private static func littleEndian<T: FixedWidthInteger>(_ value: T) -> Data {
        withUnsafeBytes(of: value.littleEndian) { Data($0) }
    }
}
