import Foundation

/// An Xcode Core Data model bundle (`App.xcdatamodeld`) as read from its files: every model version
/// (one `.xcdatamodel` folder each, its `contents` XML), in the order the app shipped them, and the
/// version `.xccurrentversion` names, the one the app builds with.
///
/// Read one with ``CoreDataModelReader``.
public struct CoreDataModel: Sendable, Hashable {
    /// The bundle's name without its extension (`App` for `App.xcdatamodeld`).
    public var name: String
    /// The model versions, oldest first.
    public var versions: [CoreDataModelVersion]
    /// The version `.xccurrentversion` names (without `.xcdatamodel`); nil when the bundle has none.
    public var currentVersion: String?
    /// What the reader noticed and did not change: a current version that is not the newest, a
    /// bundle without `.xccurrentversion`.
    public var warnings: [CoreDataModelWarning]

    public init(
        name: String, versions: [CoreDataModelVersion], currentVersion: String?, warnings: [CoreDataModelWarning]
    ) {
        self.name = name
        self.versions = versions
        self.currentVersion = currentVersion
        self.warnings = warnings
    }

    /// The version named `name` (the `.xcdatamodel` folder's name without its extension).
    public func version(named name: String) -> CoreDataModelVersion? { versions.first { $0.name == name } }
}

/// Something a model bundle says that the reader reports instead of acting on.
public enum CoreDataModelWarning: Sendable, Hashable, CustomStringConvertible {
    /// `.xccurrentversion` names a version older than the newest: the app builds with `current`,
    /// not with `newest`. The versions keep their order; nothing is reordered.
    case currentIsNotNewest(bundle: String, current: String, newest: String)
    /// The bundle has no `.xccurrentversion`: Xcode builds with its first version.
    case noCurrentVersion(bundle: String)

    public var description: String {
        switch self {
        case .currentIsNotNewest(let bundle, let current, let newest):
            "\(bundle): .xccurrentversion names \(current), not the newest version \(newest): the app builds with \(current)"
        case .noCurrentVersion(let bundle):
            "\(bundle) has no .xccurrentversion naming the model the app builds with"
        }
    }
}

/// One model version: one `.xcdatamodel` folder's `contents`.
public struct CoreDataModelVersion: Sendable, Hashable {
    /// The folder's name without `.xcdatamodel`, as Xcode names the version (`App 2`).
    public var name: String
    /// `userDefinedModelVersionIdentifier` (Core Data's `versionIdentifiers`); nil when absent.
    public var versionIdentifier: String?
    /// The entities, in the order the file lists them.
    public var entities: [CoreDataEntity]
    /// The model's configurations (`<configuration name>` with its member entities).
    public var configurations: [CoreDataConfiguration]

    public init(
        name: String, versionIdentifier: String?, entities: [CoreDataEntity], configurations: [CoreDataConfiguration]
    ) {
        self.name = name
        self.versionIdentifier = versionIdentifier
        self.entities = entities
        self.configurations = configurations
    }

    /// The entity named `name`.
    public func entity(named name: String) -> CoreDataEntity? { entities.first { $0.name == name } }
}

/// One entity of a model version.
public struct CoreDataEntity: Sendable, Hashable {
    /// The name, as the model file writes it.
    public var name: String
    /// The entity it inherits from; nil for a root entity.
    public var parentEntity: String?
    /// True for an entity with no instances of its own (only its sub-entities' rows).
    public var isAbstract: Bool
    /// The class Xcode generates or the app declares for it.
    public var representedClassName: String?
    /// Xcode's Hash Modifier: changes the version hash without changing the model.
    public var versionHashModifier: String?
    /// Xcode's Renaming ID (`elementID` in the model file): the name it had in an earlier version.
    public var renamingIdentifier: String?
    /// The attributes it declares itself (not those it inherits), in file order.
    public var attributes: [CoreDataAttribute]
    /// The relationships it declares itself, in file order.
    public var relationships: [CoreDataRelationship]
    /// The fetch indexes it declares.
    public var fetchIndexes: [CoreDataFetchIndex]
    /// Each constraint is the property names that are unique together.
    public var uniquenessConstraints: [[String]]

    public init(
        name: String, parentEntity: String? = nil, isAbstract: Bool = false, representedClassName: String? = nil,
        versionHashModifier: String? = nil, renamingIdentifier: String? = nil, attributes: [CoreDataAttribute] = [],
        relationships: [CoreDataRelationship] = [], fetchIndexes: [CoreDataFetchIndex] = [],
        uniquenessConstraints: [[String]] = []
    ) {
        self.name = name
        self.parentEntity = parentEntity
        self.isAbstract = isAbstract
        self.representedClassName = representedClassName
        self.versionHashModifier = versionHashModifier
        self.renamingIdentifier = renamingIdentifier
        self.attributes = attributes
        self.relationships = relationships
        self.fetchIndexes = fetchIndexes
        self.uniquenessConstraints = uniquenessConstraints
    }
}

/// The attribute types of Xcode's model editor, by the name `contents` writes.
public enum CoreDataAttributeType: String, Sendable, Hashable, CaseIterable {
    case integer16 = "Integer 16"
    case integer32 = "Integer 32"
    case integer64 = "Integer 64"
    case decimal = "Decimal"
    case double = "Double"
    case float = "Float"
    case string = "String"
    case boolean = "Boolean"
    case date = "Date"
    case binary = "Binary"
    case transformable = "Transformable"
    case uuid = "UUID"
    case uri = "URI"
    case objectID = "ObjectID"
    case undefined = "Undefined"
}

/// One attribute of an entity.
public struct CoreDataAttribute: Sendable, Hashable {
    /// The name, as the model file writes it.
    public var name: String
    /// Its type, as Xcode names it.
    public var attributeType: CoreDataAttributeType
    /// `optional="YES"`: it may be nil.
    public var isOptional: Bool
    /// The default value, as the model file writes it.
    public var defaultValueString: String?
    /// Large values may be kept in `.Name_SUPPORT/_EXTERNAL_DATA` instead of the row.
    public var allowsExternalBinaryDataStorage: Bool
    /// Xcode's Renaming ID (`elementID` in the model file): the name it had in an earlier version.
    public var renamingIdentifier: String?
    /// Xcode's Hash Modifier: changes the version hash without changing the model.
    public var versionHashModifier: String?
    /// A derived attribute: Core Data computes it, but it still has its column.
    public var isDerived: Bool
    /// A transient attribute: never stored, no column.
    public var isTransient: Bool
    /// The legacy `indexed="YES"` flag.
    public var isIndexed: Bool

    public init(
        name: String, attributeType: CoreDataAttributeType, isOptional: Bool = false, defaultValueString: String? = nil,
        allowsExternalBinaryDataStorage: Bool = false, renamingIdentifier: String? = nil,
        versionHashModifier: String? = nil, isDerived: Bool = false, isTransient: Bool = false, isIndexed: Bool = false
    ) {
        self.name = name
        self.attributeType = attributeType
        self.isOptional = isOptional
        self.defaultValueString = defaultValueString
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.isDerived = isDerived
        self.isTransient = isTransient
        self.isIndexed = isIndexed
    }
}

/// What deleting an object does to the objects a relationship reaches.
public enum CoreDataDeletionRule: String, Sendable, Hashable {
    case noAction = "No Action"
    case nullify = "Nullify"
    case cascade = "Cascade"
    case deny = "Deny"
}

/// One relationship of an entity.
public struct CoreDataRelationship: Sendable, Hashable {
    /// The name, as the model file writes it.
    public var name: String
    /// The entity it reaches.
    public var destinationEntity: String
    /// The destination's relationship back, if any.
    public var inverseName: String?
    /// The entity holding the inverse relationship.
    public var inverseEntity: String?
    /// True for a to-many relationship.
    public var isToMany: Bool
    /// True for an ordered to-many relationship (an `NSOrderedSet`).
    public var isOrdered: Bool
    /// `optional="YES"`: it may be nil.
    public var isOptional: Bool
    /// A transient relationship: never stored.
    public var isTransient: Bool
    /// What deleting the source does to the destination.
    public var deletionRule: CoreDataDeletionRule
    /// The fewest objects it must reach, when given.
    public var minCount: Int?
    /// The most objects it may reach, when given (1 for a to-one).
    public var maxCount: Int?
    /// Xcode's Renaming ID (`elementID` in the model file): the name it had in an earlier version.
    public var renamingIdentifier: String?
    /// Xcode's Hash Modifier: changes the version hash without changing the model.
    public var versionHashModifier: String?

    public init(
        name: String, destinationEntity: String, inverseName: String? = nil, inverseEntity: String? = nil,
        isToMany: Bool = false, isOrdered: Bool = false, isOptional: Bool = false, isTransient: Bool = false,
        deletionRule: CoreDataDeletionRule = .nullify, minCount: Int? = nil, maxCount: Int? = nil,
        renamingIdentifier: String? = nil, versionHashModifier: String? = nil
    ) {
        self.name = name
        self.destinationEntity = destinationEntity
        self.inverseName = inverseName
        self.inverseEntity = inverseEntity
        self.isToMany = isToMany
        self.isOrdered = isOrdered
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.deletionRule = deletionRule
        self.minCount = minCount
        self.maxCount = maxCount
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
    }
}

/// A fetch index (`<fetchIndex name>` with its `<fetchIndexElement>`s).
public struct CoreDataFetchIndex: Sendable, Hashable {
    /// One indexed property, in index order.
    public struct Element: Sendable, Hashable {
        /// The property (or expression) indexed.
        public var property: String
        /// `Binary` (an ordinary index) or `RTree`.
        public var type: String
        /// `order="ascending"` (the default) rather than descending.
        public var isAscending: Bool

        public init(property: String, type: String = "Binary", isAscending: Bool = true) {
            self.property = property
            self.type = type
            self.isAscending = isAscending
        }
    }

    /// The name, as the model file writes it.
    public var name: String
    /// The indexed properties, in order.
    public var elements: [Element]
    /// The partial index's predicate, when it has one.
    public var partialIndexExpression: String?

    public init(name: String, elements: [Element], partialIndexExpression: String? = nil) {
        self.name = name
        self.elements = elements
        self.partialIndexExpression = partialIndexExpression
    }
}

/// A configuration: a named set of entities, kept in a store of their own.
public struct CoreDataConfiguration: Sendable, Hashable {
    /// The name, as the model file writes it.
    public var name: String
    /// The entities the configuration's store holds.
    public var memberEntities: [String]
    /// `usedWithCloudKit="YES"`: the store is mirrored to CloudKit.
    public var usedWithCloudKit: Bool

    public init(name: String, memberEntities: [String], usedWithCloudKit: Bool = false) {
        self.name = name
        self.memberEntities = memberEntities
        self.usedWithCloudKit = usedWithCloudKit
    }
}
