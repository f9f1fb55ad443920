import Backstage
import Foundation

/// Why a Core Data migration program cannot be compiled or run: model version, entity, property,
/// policy class or table, never a row's values.
public struct CoreDataMigrationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An entity mapping whose rows only the app's own code (an `NSEntityMigrationPolicy`) can make.
    public struct CustomPolicy: Sendable, Hashable {
        /// The destination entity of the entity mapping.
        public var destinationEntity: String
        /// Its source entity; nil when the mapping has none.
        public var sourceEntity: String?
        /// The policy class, as the mapping model names it (`Module.ClassName`).
        public var policyClass: String

        public init(destinationEntity: String, sourceEntity: String?, policyClass: String) {
            self.destinationEntity = destinationEntity
            self.sourceEntity = sourceEntity
            self.policyClass = policyClass
        }
    }

    public enum Reason: Sendable, Hashable {
        /// These entity mappings run a custom migration policy: give their SQL
        /// (``CoreDataMigrationCompiler/CustomSQL``) for each destination entity.
        case needsDeveloperSQL([CustomPolicy])
        /// Core Data cannot infer the migration and no mapping model was given.
        case notInferable(CoreDataInferenceFailure)
        /// The store layout of one of the versions cannot be derived.
        case schema(CoreDataSchemaError)
        /// A mapping model's value expression that is neither a key path of `$source` nor a constant.
        case unsupportedValueExpression(entity: String, property: String, expression: String)
        /// A mapping model that does not map between these two versions (an entity it names is missing).
        case mappingModelDoesNotFit(entity: String)
        /// Rows of several source tables would land in one table: their primary keys could collide.
        case mergesTables(table: String, sources: [String])
        /// A relationship change whose rows Backstage does not know how to move.
        case unsupportedRelationship(entity: String, relationship: String, why: String)
        /// Developer SQL names a placeholder the program does not know.
        case unknownPlaceholder(String)
        /// `Z_METADATA` holds no row, or its plist is not a dictionary.
        case metadataIsNotADictionary
        /// Rows of a table the program copies have a `Z_ENT` that is none of its entities' (counts only).
        case rowsOfNoEntity(table: String, rows: Int, entities: [Int])
        /// The program has something unresolved and the runner was not told how to go on.
        case unresolved([CoreDataMigrationProgram.Unresolved])
    }

    public var reason: Reason

    public init(reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .needsDeveloperSQL(let policies):
            let named = policies.map { policy in
                "entity \(policy.destinationEntity)"
                    + (policy.sourceEntity.map { " (from \($0))" } ?? "") + " runs \(policy.policyClass)"
            }
            return "the mapping model's custom migration policies are Swift code Backstage cannot run: "
                + named.joined(separator: "; ") + "; give the SQL for each of these entity mappings"
        case .notInferable(let failure): return "Core Data cannot infer this migration: \(failure)"
        case .schema(let error): return "\(error)"
        case .unsupportedValueExpression(let entity, let property, let expression):
            return "\(entity).\(property): the value expression \(expression) is neither $source.keyPath nor a "
                + "constant; give the SQL for this entity mapping"
        case .mappingModelDoesNotFit(let entity):
            return "the mapping model names entity \(entity), which these model versions do not have"
        case .mergesTables(let table, let sources):
            return "\(table) would hold rows of \(sources.joined(separator: " and ")): their keys could collide"
        case .unsupportedRelationship(let entity, let relationship, let why):
            return "\(entity).\(relationship): \(why)"
        case .unknownPlaceholder(let name): return "the developer SQL names \(name), which the program does not know"
        case .metadataIsNotADictionary: return "Z_METADATA holds no plist dictionary"
        case .rowsOfNoEntity(let table, let rows, let entities):
            return CoreDataMigrationProgram.Refusal.rowsOfNoEntity(table: table, rows: rows, entities: entities)
                .description
        case .unresolved(let items): return items.map(\.description).joined(separator: "; ")
        }
    }
}
