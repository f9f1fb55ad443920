import Backstage
import Foundation

extension StoreInspection {
    /// Which catalog version's Core Data model wrote a store: named only when one version is left,
    /// never one of several picked.
    public struct ModelVersionMatch: Sendable, Hashable, Codable {
        /// What told the version apart.
        public enum Evidence: String, Sendable, Hashable, Codable {
            /// `Z_METADATA`'s `NSStoreModelVersionHashes` equal those the catalog captured for it.
            case versionHashes = "version-hashes"
            /// `Z_METADATA`'s `NSStoreModelVersionIdentifiers` equal the model version's identifiers.
            case versionIdentifiers = "version-identifiers"
            /// The store's schema: no other version's store has it.
            case schema
        }

        /// The catalog versions it may be, oldest first: one when told apart, none, or several that
        /// neither the schema nor `Z_METADATA` tells apart.
        public var versions: [String]
        /// What told the one version apart; nil unless ``versions`` holds exactly one.
        public var evidence: Evidence?

        /// The version, when exactly one is left.
        public var version: String? { versions.count == 1 ? versions[0] : nil }
    }

    /// The catalog versions whose Core Data model may have written `store`: by version hashes where
    /// the catalog knows them (captured from a real store), else by the schema (`Z_MODELCACHE` left
    /// out: Core Data writes it on some systems only), narrowed by version identifiers when those
    /// differ between the versions left. Nil when the store is not a Core Data store or the catalog
    /// has no Core Data version.
    static func modelVersion(of store: StoreSchema, catalog: CatalogFolder) throws -> ModelVersionMatch? {
        guard let facts = store.coreData else { return nil }
        var known: [(name: String, facts: CoreDataFacts)] = []
        var schemaMatches: [String] = []
        let statements = coreDataStatements(store)
        for version in catalog.manifest.versions {
            for candidate in version.stores {
                let schema = try catalog.schema(of: candidate)
                guard let recorded = schema.coreData else { continue }
                known.append((version.name, recorded))
                if coreDataStatements(schema) == statements { schemaMatches.append(version.name) }
            }
        }
        guard !known.isEmpty else { return nil }
        func unique(_ names: [String]) -> [String] {
            var seen = Set<String>()
            return names.filter { seen.insert($0).inserted }
        }
        let byHashes =
            facts.versionHashes.isEmpty
            ? [] : unique(known.filter { $0.facts.versionHashes == facts.versionHashes }.map(\.name))
        var pool = byHashes.isEmpty ? unique(schemaMatches) : byHashes
        var evidence: ModelVersionMatch.Evidence = byHashes.isEmpty ? .schema : .versionHashes
        if pool.count > 1 {
            let narrowed = pool.filter { name in
                known.contains { $0.name == name && $0.facts.versionIdentifiers == facts.versionIdentifiers }
            }
            if !narrowed.isEmpty && narrowed.count < pool.count {
                pool = narrowed
                evidence = .versionIdentifiers
            }
        }
        return ModelVersionMatch(versions: pool, evidence: pool.count == 1 ? evidence : nil)
    }

    /// A Core Data store's statements, without `Z_MODELCACHE`'s.
    static func coreDataStatements(_ schema: StoreSchema) -> Set<String> {
        Set(schema.objects.filter { $0.table != "Z_MODELCACHE" }.map(\.sql))
    }
}
