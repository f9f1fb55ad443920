import Backstage
import Foundation

extension CoreDataCatalog {
    /// One store of a model version whose configurations put its entities in several stores.
    public struct ConfigurationStore: Sendable, Hashable {
        /// The configuration's name, as the model writes it.
        public var configuration: String
        /// Where the app keeps the configuration's store.
        public var location: ContainerLocation
        /// The configuration's entities.
        public var entities: [String]
        /// Its tables: its entities' tables and the join tables of its many-to-many relationships,
        /// in the order Core Data creates them.
        public var tables: [String]
    }

    /// Where the store of configuration `name` lives when nothing says: in the folder of the store
    /// `store`, named after the configuration (`applicationSupport/App.sqlite` →
    /// `applicationSupport/Cloud.sqlite`); a store in Documents gives stores in Application Support,
    /// where the user does not see them (`documents/App.sqlite` → `applicationSupport/Cloud.sqlite`).
    public static func defaultLocation(
        ofConfiguration name: String, beside store: ContainerLocation
    ) -> ContainerLocation {
        let folder = (store.path as NSString).deletingLastPathComponent
        let file = catalogName(of: name) + ".sqlite"
        return ContainerLocation(
            store.root == .documents ? .applicationSupport : store.root, folder.isEmpty ? file : "\(folder)/\(file)")
    }

    /// The stores of `version`'s configurations, each entity's table in its configuration's store:
    /// nil when fewer than two configurations hold entities (one store holds them all); a failure
    /// naming why when the configurations do not part the store (an entity in none or in two, a
    /// table or a relationship across two, two stores at one place).
    static func configurationStores(
        of version: CoreDataModelVersion, layout: CoreDataStoreLayout, store: ContainerLocation,
        locations: [String: ContainerLocation]
    ) -> Result<[ConfigurationStore], ConfigurationProblem>? {
        let parts = version.configurations.filter { !$0.memberEntities.isEmpty }
        guard parts.count > 1 else { return nil }
        var home: [String: String] = [:]
        for part in parts {
            for entity in part.memberEntities.sorted() {
                if let other = home[entity], other != part.name {
                    return .failure(.init("entity \(entity) is in configurations \(other) and \(part.name)"))
                }
                home[entity] = part.name
            }
        }
        for entity in version.entities.map(\.name).sorted() where home[entity] == nil {
            return .failure(.init("entity \(entity) is in none of its configurations: its rows would have no store"))
        }
        var tableHome: [String: String] = [:]
        for entity in layout.entities {
            guard let part = home[entity.name] else { continue }
            if let other = tableHome[entity.table], other != part {
                return .failure(
                    .init(
                        "table \(entity.table) holds entities of configurations \(other) and \(part) (Core Data keeps "
                            + "a sub-entity in its root entity's table, so a hierarchy lives in one store)"))
            }
            tableHome[entity.table] = part
        }
        for entity in version.entities {
            for relationship in entity.relationships where !relationship.isTransient {
                let destination = relationship.destinationEntity
                guard let there = home[destination], let here = home[entity.name], there != here
                else { continue }
                return .failure(
                    .init(
                        "relationship \(entity.name).\(relationship.name) of configuration \(here) reaches "
                            + "\(destination) of configuration \(there): Core Data keeps no relationship across stores")
                )
            }
        }
        for (table, entities) in layout.joinTables {
            tableHome[table] = entities.first.flatMap { home[$0] }
        }
        var result: [ConfigurationStore] = []
        let order = layout.objects.filter { $0.kind == .table }.map(\.name)
        for part in parts {
            let location = locations[part.name] ?? defaultLocation(ofConfiguration: part.name, beside: store)
            if location.sameFile(as: store) {
                return .failure(
                    .init(
                        "configuration \(part.name)'s store would be \(location), the store it is split from: "
                            + "give it a place of its own (--configuration-store \(part.name)=LOCATION)"))
            }
            if let other = result.first(where: { $0.location.sameFile(as: location) }) {
                return .failure(
                    .init("configurations \(other.configuration) and \(part.name) would both be stored at \(location)"))
            }
            result.append(
                ConfigurationStore(
                    configuration: part.name, location: location, entities: part.memberEntities.sorted(),
                    tables: order.filter { tableHome[$0] == part.name }))
        }
        return .success(result)
    }

    /// Why a model version's configurations cannot part its store.
    public struct ConfigurationProblem: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The schema of configuration store `part`, cut from `schema`, the schema of the one store of
    /// every entity: its tables and their indexes, and Core Data's own tables, which keep the whole
    /// model's entities (`Z_PRIMARYKEY`) and version hashes (`Z_METADATA`).
    static func schema(of part: ConfigurationStore, cutFrom schema: StoreSchema) -> StoreSchema {
        let kept = Set(part.tables).union(["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"])
        var result = schema
        result.objects = schema.objects.filter { kept.contains($0.table) }
        result.tables = schema.tables.filter { kept.contains($0.key) }
        return result
    }

    /// What a catalog version of several configuration stores says of the stores Core Data writes
    /// for them, which no store of `coredata-models/` shows.
    static func configurationAssumption(_ version: CoreDataModelVersion, _ parts: [ConfigurationStore]) -> String {
        let listed = parts.map { "\($0.configuration) at \($0.location)" }.joined(separator: ", ")
        return "\(version.name): its configurations put its entities in \(parts.count) stores (\(listed)); each "
            + "store is taken to keep the whole model's Z_PRIMARYKEY (entity numbers as in one store) and "
            + "version hashes, with a store UUID of its own: no real store of several configurations proves it"
    }
}
