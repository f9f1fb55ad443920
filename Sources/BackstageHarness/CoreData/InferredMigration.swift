import Foundation

/// What Core Data's lightweight migration (`NSMappingModel.inferredMappingModel`) does between two
/// model versions: which destination entity and property each comes from, or why it cannot be
/// inferred.
///
/// The rules are Apple's ("Lightweight Migration", Core Data Model Versioning and Data Migration
/// Programming Guide): an entity, attribute or relationship keeps its name or names its earlier one
/// in its Renaming ID; attributes and relationships may be added (optional, or mandatory with a
/// default) and removed; a mandatory attribute may become optional, an optional one mandatory only
/// with a default; a relationship may become to-many or to-one, ordered or not; entities may be
/// added, removed, renamed, given a new parent and have properties moved up or down their
/// hierarchy — but two entities without a common parent in the source may not share one in the
/// destination (their rows would have to merge into one table). An attribute's type may only
/// widen (`Integer 16` → `Integer 32` → `Integer 64`, `Float` → `Double`): Backstage treats every
/// other type change as one Core Data cannot infer.
///
/// ```swift
/// switch InferredMigration.infer(from: model.versions[0], to: model.versions[1]) {
/// case .success(let mapping): mapping.entities   // what the migration step copies where
/// case .failure(let failure): failure.problems   // version, entity, property, reason
/// }
/// ```
public enum InferredMigration {
    /// The mapping from `source` to `destination`, or every reason it cannot be inferred.
    public static func infer(
        from source: CoreDataModelVersion, to destination: CoreDataModelVersion
    ) -> Result<CoreDataMigrationMapping, CoreDataInferenceFailure> {
        var problems: [CoreDataInferenceProblem] = []
        var sourceEntity: String?
        var sourceProperty: String?
        func problem(_ entity: String, _ property: String?, _ reason: CoreDataInferenceProblem.Reason) {
            problems.append(
                CoreDataInferenceProblem(
                    source: source.name, destination: destination.name, entity: entity, property: property,
                    reason: reason, sourceEntity: sourceEntity, sourceProperty: property == nil ? nil : sourceProperty))
        }
        var mappings: [CoreDataMigrationMapping.EntityMapping] = []
        var claimed: [String: String] = [:]
        for entity in destination.entities {
            let key = entity.renamingIdentifier ?? entity.name
            // Core Data compares renaming identifiers (a property's or entity's name when it has
            // none): an element renamed once keeps its Renaming ID in every later version.
            var from =
                source.entities.first { ($0.renamingIdentifier ?? $0.name) == key } ?? source.entity(named: key)
            if let earlier = from, let other = claimed[earlier.name] {
                problem(entity.name, nil, .sameSource(earlier.name, alsoClaimedBy: other))
                from = nil
            }
            if let from { claimed[from.name] = entity.name }
            sourceEntity = from?.name
            var mapping = CoreDataMigrationMapping.EntityMapping(source: from?.name, destination: entity.name)
            if let from, entity.isAbstract, !from.isAbstract {
                problem(entity.name, nil, .becameAbstract(from.name))
            }
            let sourceProperties = from.map { properties(of: $0, in: source) } ?? [:]
            for (name, property) in properties(of: entity, in: destination).sorted(by: { $0.key < $1.key }) {
                let identifier = property.renamingIdentifier ?? name
                let earlier =
                    sourceProperties.values.first { ($0.renamingIdentifier ?? $0.name) == identifier }
                    ?? sourceProperties[identifier]
                sourceProperty = earlier?.name
                switch (property, earlier) {
                case (.attribute(let new), .attribute(let old)?):
                    mapping.attributes.append(.init(source: old.name, destination: new.name))
                    if old.attributeType != new.attributeType,
                        !isWidening(old.attributeType, to: new.attributeType)
                    {
                        problem(entity.name, name, .typeChanged(from: old.attributeType, to: new.attributeType))
                    }
                    if old.isOptional, !new.isOptional, new.defaultValueString == nil {
                        problem(entity.name, name, .becameMandatoryWithoutDefault)
                    }
                case (.attribute(let new), nil):
                    mapping.attributes.append(.init(source: nil, destination: new.name))
                    if from != nil, !new.isOptional, new.defaultValueString == nil {
                        problem(entity.name, name, .newMandatoryWithoutDefault)
                    }
                case (.relationship(let new), .relationship(let old)?):
                    mapping.relationships.append(.init(source: old.name, destination: new.name))
                    let mappedDestination =
                        destination.entities.first { ($0.renamingIdentifier ?? $0.name) == old.destinationEntity }?
                        .name
                    if mappedDestination != new.destinationEntity,
                        !inherits(new.destinationEntity, from: mappedDestination, in: destination)
                    {
                        problem(
                            entity.name, name,
                            .destinationChanged(from: old.destinationEntity, to: new.destinationEntity))
                    }
                    if isMandatory(old) == false, isMandatory(new) {
                        problem(entity.name, name, .relationshipBecameMandatory)
                    }
                case (.relationship(let new), nil):
                    mapping.relationships.append(.init(source: nil, destination: new.name))
                    if from != nil, isMandatory(new) { problem(entity.name, name, .newMandatoryRelationship) }
                case (.attribute, .relationship?), (.relationship, .attribute?):
                    problem(entity.name, name, .kindChanged)
                }
            }
            mappings.append(mapping)
        }
        problems += mergedHierarchies(mappings, source: source, destination: destination)
        let removed = source.entities.map(\.name).filter { claimed[$0] == nil }
        let mapping = CoreDataMigrationMapping(
            source: source.name, destination: destination.name, entities: mappings, removedEntities: removed)
        if !problems.isEmpty { return .failure(CoreDataInferenceFailure(problems: problems, partial: mapping)) }
        return .success(mapping)
    }

    /// A stored property of an entity: its own or inherited, never a transient one.
    enum Property {
        case attribute(CoreDataAttribute)
        case relationship(CoreDataRelationship)

        var name: String {
            switch self {
            case .attribute(let a): a.name
            case .relationship(let r): r.name
            }
        }

        var renamingIdentifier: String? {
            switch self {
            case .attribute(let a): a.renamingIdentifier
            case .relationship(let r): r.renamingIdentifier
            }
        }
    }

    /// Every stored property of `entity`, its own and its ancestors', by name.
    static func properties(of entity: CoreDataEntity, in version: CoreDataModelVersion) -> [String: Property] {
        var result: [String: Property] = [:]
        for current in lineage(of: entity.name, in: version).reversed() {
            for attribute in current.attributes where !attribute.isTransient {
                result[attribute.name] = .attribute(attribute)
            }
            for relationship in current.relationships where !relationship.isTransient {
                result[relationship.name] = .relationship(relationship)
            }
        }
        return result
    }

    /// `name` and its ancestors, nearest first.
    static func lineage(of name: String, in version: CoreDataModelVersion) -> [CoreDataEntity] {
        var result: [CoreDataEntity] = []
        var current = version.entity(named: name)
        while let entity = current, result.count <= version.entities.count {
            result.append(entity)
            current = entity.parentEntity.flatMap(version.entity(named:))
        }
        return result
    }

    /// The root of `name`'s hierarchy: the table its rows live in.
    static func root(of name: String, in version: CoreDataModelVersion) -> String {
        lineage(of: name, in: version).last?.name ?? name
    }

    private static func inherits(_ name: String, from ancestor: String?, in version: CoreDataModelVersion) -> Bool {
        guard let ancestor else { return false }
        return lineage(of: name, in: version).contains { $0.name == ancestor }
    }

    private static func isMandatory(_ relationship: CoreDataRelationship) -> Bool {
        !relationship.isOptional || (relationship.minCount ?? 0) > 0
    }

    /// Integer widening and `Float` → `Double`: the conversions that keep every value.
    static func isWidening(_ old: CoreDataAttributeType, to new: CoreDataAttributeType) -> Bool {
        let order: [CoreDataAttributeType] = [.integer16, .integer32, .integer64]
        if let a = order.firstIndex(of: old), let b = order.firstIndex(of: new) { return a < b }
        return old == .float && new == .double
    }

    /// Mapped entities whose hierarchy now holds objects from another hierarchy of the source: each
    /// entity moved under a root whose objects had another root before (or, under a new root, each
    /// after the first from another former root).
    private static func mergedHierarchies(
        _ mappings: [CoreDataMigrationMapping.EntityMapping], source: CoreDataModelVersion,
        destination: CoreDataModelVersion
    ) -> [CoreDataInferenceProblem] {
        var firstByRoot: [String: (entity: String, sourceRoot: String)] = [:]
        var problems: [CoreDataInferenceProblem] = []
        for mapping in mappings {
            guard let from = mapping.source else { continue }
            let newRoot = root(of: mapping.destination, in: destination)
            let oldRoot = root(of: from, in: source)
            let expected: (entity: String, sourceRoot: String)
            if let rootSource = mappings.first(where: { $0.destination == newRoot })?.source {
                expected = (newRoot, root(of: rootSource, in: source))
            } else if let first = firstByRoot[newRoot] {
                expected = first
            } else {
                firstByRoot[newRoot] = (mapping.destination, oldRoot)
                continue
            }
            if expected.sourceRoot != oldRoot {
                problems.append(
                    CoreDataInferenceProblem(
                        source: source.name, destination: destination.name, entity: mapping.destination,
                        property: nil,
                        reason: .mergesHierarchies(with: expected.entity, sharedRoot: newRoot, formerRoot: oldRoot),
                        sourceEntity: from))
            }
        }
        return problems
    }
}

/// What Core Data's inferred migration maps between two model versions; the Core Data migration
/// step copies rows by it.
public struct CoreDataMigrationMapping: Sendable, Hashable {
    /// Where one destination property's values come from.
    public struct PropertyMapping: Sendable, Hashable {
        /// The source property (its earlier name when renamed); nil for a new one (its default, or nil).
        public var source: String?
        /// The destination property.
        public var destination: String

        public init(source: String?, destination: String) {
            self.source = source
            self.destination = destination
        }
    }

    /// Where one destination entity's objects come from.
    public struct EntityMapping: Sendable, Hashable {
        /// The source entity (its earlier name when renamed); nil for a new entity (no objects).
        public var source: String?
        /// The destination entity.
        public var destination: String
        /// Every stored attribute of the destination entity (own and inherited), by name.
        public var attributes: [PropertyMapping] = []
        /// Every stored relationship of the destination entity (own and inherited), by name.
        public var relationships: [PropertyMapping] = []
    }

    /// The source model version's name.
    public var source: String
    /// The destination model version's name.
    public var destination: String
    /// One mapping per destination entity, in the destination model's order.
    public var entities: [EntityMapping]
    /// The source entities nothing maps from: their objects are deleted.
    public var removedEntities: [String]
}

/// Why Core Data cannot infer the migration between two model versions: every problem found.
public struct CoreDataInferenceFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Each change that makes the migration uninferable, in the destination model's order.
    public var problems: [CoreDataInferenceProblem]
    /// What maps to what all the same (each destination entity and property to the source's it
    /// comes from): what else the migration would meet can be told from it (`catalog lint`'s data
    /// findings). Not compared.
    public var partial: CoreDataMigrationMapping?

    public init(problems: [CoreDataInferenceProblem], partial: CoreDataMigrationMapping? = nil) {
        self.problems = problems
        self.partial = partial
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.problems == rhs.problems }
    public func hash(into hasher: inout Hasher) { hasher.combine(problems) }

    public var description: String { problems.map(\.description).joined(separator: "; ") }
}

/// One change between two model versions that Core Data's lightweight migration cannot infer.
public struct CoreDataInferenceProblem: Sendable, Hashable, CustomStringConvertible {
    /// The change.
    public enum Reason: Sendable, Hashable {
        /// The attribute's type changed in a way that does not keep every value.
        case typeChanged(from: CoreDataAttributeType, to: CoreDataAttributeType)
        /// An optional attribute became mandatory without a default: its nils cannot be filled.
        case becameMandatoryWithoutDefault
        /// A mandatory attribute without a default was added to an entity that already had objects.
        case newMandatoryWithoutDefault
        /// A mandatory relationship was added to an entity that already had objects.
        case newMandatoryRelationship
        /// An optional relationship became mandatory: objects without it cannot be migrated.
        case relationshipBecameMandatory
        /// The relationship now reaches an entity that does not come from the one it reached.
        case destinationChanged(from: String, to: String)
        /// A property that was an attribute is a relationship now, or the other way round.
        case kindChanged
        /// The entity is abstract now but its source entity had objects of its own.
        case becameAbstract(String)
        /// Two destination entities name the same source entity.
        case sameSource(String, alsoClaimedBy: String)
        /// The entity now shares root `sharedRoot` with `with`, which had another root in the source.
        case mergesHierarchies(with: String, sharedRoot: String, formerRoot: String)
    }

    /// The source model version.
    public var source: String
    /// The destination model version.
    public var destination: String
    /// The destination entity.
    public var entity: String
    /// The destination attribute or relationship, when the problem is one property's.
    public var property: String?
    public var reason: Reason
    /// The source entity the destination entity comes from; nil for a new entity.
    public var sourceEntity: String?
    /// The source property the destination property comes from; nil for a new one.
    public var sourceProperty: String?

    /// `attribute title` or `relationship owner`, by what the destination model declares.
    public var propertyKind: String {
        switch reason {
        case .newMandatoryRelationship, .relationshipBecameMandatory, .destinationChanged: "relationship"
        case .kindChanged: "property"
        default: "attribute"
        }
    }

    /// Where: `model version App 2 → App 3, entity Recipe, attribute title`.
    public var place: String {
        let named = property.map { ", \(propertyKind) \($0)" } ?? ""
        return "model version \(source) → \(destination), entity \(entity)\(named)"
    }

    /// What the change is and why Core Data cannot infer it.
    public var cause: String {
        switch reason {
        case .typeChanged(let from, let to):
            "its type changes from \(from.rawValue) to \(to.rawValue), a conversion lightweight migration cannot infer"
        case .becameMandatoryWithoutDefault:
            "it becomes mandatory without a default value: objects holding nil there cannot be migrated"
        case .newMandatoryWithoutDefault:
            "it is new and mandatory without a default value: existing objects have no value for it"
        case .newMandatoryRelationship:
            "it is new and mandatory: existing objects reach nothing through it"
        case .relationshipBecameMandatory:
            "it becomes mandatory: objects that reach nothing through it cannot be migrated"
        case .destinationChanged(let from, let to):
            "it reached \(from) and now reaches \(to), which does not come from \(from)"
        case .kindChanged:
            "it changes between attribute and relationship"
        case .becameAbstract(let from):
            "it is abstract now, so the objects of \(from) have no entity to become"
        case .sameSource(let from, let other):
            "it and \(other) both come from \(from) (name or Renaming ID): one source maps to one destination"
        case .mergesHierarchies(let other, let root, let former):
            "it was in the hierarchy of \(former) and now shares the root \(root) with \(other), which was in "
                + "another: lightweight migration cannot merge two entity hierarchies"
        }
    }

    public var description: String { "\(place): \(cause)" }
}
