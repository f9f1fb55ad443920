import Backstage
import Foundation

extension CoreDataCatalog {
    /// The folder of a catalog made from a model that keeps a copy of the model bundle and its
    /// mapping models, so `catalog lint` and `inspect` read the model the versions came from.
    public static let modelFolder = "model"

    /// Why a model catalog's kept model, or a store captured into it, cannot be used.
    public enum ModelProblem: Error, Sendable, Hashable, CustomStringConvertible {
        /// The kept copy names model versions no catalog version was made from, or lacks one.
        case versionMissing(catalog: String, version: String)
        /// The captured store's schema matches no model version's store.
        case storeMatchesNoVersion(store: String)
        /// The captured store's schema matches several versions and its `Z_METADATA` does not tell
        /// which one wrote it.
        case storeMatchesSeveralVersions(store: String, versions: [String])

        public var description: String {
            switch self {
            case .versionMissing(let catalog, let version):
                "the model kept in \(catalog)/\(CoreDataCatalog.modelFolder) has no model version for catalog version \(version)"
            case .storeMatchesNoVersion(let store):
                "\(store) has the schema of no version of the model: it was not written by one of them"
            case .storeMatchesSeveralVersions(let store, let versions):
                "\(store) has the schema of several model versions (\(versions.joined(separator: ", "))) and its "
                    + "Z_METADATA does not tell which one wrote it"
            }
        }
    }

    /// What a catalog made from a model keeps of it: the model, its versions in the catalog's
    /// order, and its mapping models.
    public struct KeptModel: Sendable {
        /// The model, its versions in the catalog's order.
        public var model: CoreDataModel
        /// The mapping models given with it.
        public var mappings: [CoreDataMappingModel]

        /// The model version catalog version `name` was made from.
        public func version(forCatalogVersion name: String) -> CoreDataModelVersion? {
            model.versions.first { CoreDataCatalog.catalogName(of: $0.name) == name }
        }
    }

    /// Copies the model bundle (or single model version) at `modelURL` and the mapping models at
    /// `mappings` into `catalog`'s ``modelFolder``.
    public static func keep(model modelURL: URL, mappings: [URL], in catalog: CatalogFolder) throws {
        let folder = catalog.url.appending(path: modelFolder, directoryHint: .isDirectory)
        let manager = FileManager.default
        try manager.createDirectory(at: folder.appending(path: "mappings"), withIntermediateDirectories: true)
        try manager.copyItem(at: modelURL, to: folder.appending(path: modelURL.lastPathComponent))
        for mapping in mappings {
            try manager.copyItem(at: mapping, to: folder.appending(path: "mappings/\(mapping.lastPathComponent)"))
        }
    }

    /// The model `catalog` keeps, its versions in the catalog's order; nil for a catalog not made
    /// from a model (or made before models were kept).
    public static func keptModel(of catalog: CatalogFolder) throws -> KeptModel? {
        let folder = catalog.url.appending(path: modelFolder, directoryHint: .isDirectory)
        let manager = FileManager.default
        guard
            let bundle = try? manager.contentsOfDirectory(atPath: folder.path).sorted().first(where: {
                $0.hasSuffix(".xcdatamodeld") || $0.hasSuffix(".xcdatamodel")
            })
        else { return nil }
        var model = try CoreDataModelReader.read(folder.appending(path: bundle))
        var ordered: [CoreDataModelVersion] = []
        for version in catalog.manifest.versions {
            guard let found = model.versions.first(where: { catalogName(of: $0.name) == version.name }) else {
                throw ModelProblem.versionMissing(catalog: catalog.url.path, version: version.name)
            }
            ordered.append(found)
        }
        model.versions = ordered
        let mappingFolder = folder.appending(path: "mappings")
        let names = (try? manager.contentsOfDirectory(atPath: mappingFolder.path)) ?? []
        let mappings = try names.filter { $0.hasSuffix(".xcmappingmodel") }.sorted().map {
            try CoreDataMappingModel.read(mappingFolder.appending(path: $0))
        }
        return KeptModel(model: model, mappings: mappings)
    }

    /// Captures the store at `store` (from a private copy) into the version of `catalog` that wrote
    /// it: the version whose schema it has (`Z_MODELCACHE` aside), told apart by `Z_METADATA`'s version identifiers when
    /// several have it. The version's schema file then holds the store's statistics (counts and
    /// shares, never row content) and its version hashes. Returns the catalog version's name.
    @discardableResult
    public static func capture(_ store: StoreFileSet, into catalog: inout CatalogFolder) throws -> String {
        let captured = try StoreCapture.capture(store)
        let objects = StoreInspection.coreDataStatements(captured)
        var matches: [(version: CatalogVersion, store: CatalogStore, schema: StoreSchema)] = []
        for version in catalog.manifest.versions {
            for candidate in version.stores {
                let schema = try catalog.schema(of: candidate)
                if StoreInspection.coreDataStatements(schema) == objects {
                    matches.append((version, candidate, schema))
                }
            }
        }
        if matches.count > 1, let identifiers = captured.coreData?.versionIdentifiers {
            let narrowed = matches.filter { $0.schema.coreData?.versionIdentifiers == identifiers }
            if !narrowed.isEmpty { matches = narrowed }
        }
        guard let match = matches.first else { throw ModelProblem.storeMatchesNoVersion(store: store.main.path) }
        guard matches.count == 1 else {
            throw ModelProblem.storeMatchesSeveralVersions(
                store: store.main.path, versions: matches.map(\.version.name))
        }
        // The store Core Data wrote is the truth: its statements (with or without Z_MODELCACHE), its
        // statistics and version hashes replace what the model gave.
        try catalog.write(captured, at: match.store.schema)
        for (v, version) in catalog.manifest.versions.enumerated() where version.name == match.version.name {
            for (s, candidate) in version.stores.enumerated() where candidate.location == match.store.location {
                catalog.manifest.versions[v].stores[s].tables = captured.tableNames
            }
        }
        try catalog.writeManifest()
        return match.version.name
    }

    /// True when `schema` was captured from a store Core Data wrote (its `Z_METADATA` has its row),
    /// not made from the model (which has no rows): only then do its statistics say anything about
    /// users' data.
    static func isCaptured(_ schema: StoreSchema) -> Bool {
        (schema.tables["Z_METADATA"]?.rows ?? 0) > 0
    }
}
