import Backstage
import Foundation

/// A catalog made from a Core Data model bundle instead of captured stores: one catalog version
/// per model version, in the model's order, each with the store Core Data writes for it
/// (``CoreDataStoreLayout``).
///
/// Versions after the first carry no plan yet: the Core Data migration between two model versions
/// is not written by this release, so `catalog check` names each of them as a version no plan
/// reaches, and `fixture`, `catalog show` work on every version.
public enum CoreDataCatalog {
    /// Why a model cannot become a catalog.
    public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// Two model versions give the same catalog version name once made a usable name.
        case sameCatalogName(String, versions: [String])
        /// `configurationStores` names a configuration no model version has.
        case unknownConfiguration(String, known: [String])

        public var description: String {
            switch self {
            case .sameCatalogName(let name, let versions):
                "model versions \(versions.joined(separator: " and ")) both become catalog version \(name): rename one"
            case .unknownConfiguration(let name, let known):
                "no model version has a configuration \(name)"
                    + (known.isEmpty
                        ? " (the model has none)" : " (its configurations: \(known.joined(separator: ", ")))")
            }
        }
    }

    /// What ``make(from:store:newestStore:app:options:configurationStores:)`` gives: the manifest, each store's schema file and
    /// what the model and layouts noted.
    public struct Made: Sendable {
        /// The catalog's manifest: one version per model version.
        public var manifest: CatalogManifest
        /// Path relative to the catalog folder → schema.
        public var schemas: [(file: String, schema: StoreSchema)]
        /// The model's warnings (a current version that is not the newest) and every layout's
        /// assumptions, one sentence each.
        public var notes: [String]
    }

    /// The catalog version name for model version `name`: the same name with every character a
    /// catalog version name cannot hold (a space, most often: `App 2`) replaced by `-`.
    public static func catalogName(of name: String) -> String {
        var result = String(
            name.unicodeScalars.map { scalar -> Character in
                scalar.isASCII
                    && (CharacterSet.alphanumerics.contains(scalar) || ".-_+".unicodeScalars.contains(scalar))
                    ? Character(scalar) : "-"
            })
        while result.hasPrefix(".") || result.hasPrefix("-") { result.removeFirst() }
        if result.isEmpty { result = "v" }
        return String(result.prefix(64))
    }

    /// Where the newest version of a model of several versions keeps its store when nothing says:
    /// where the older ones do, or, for a store in Documents, the same path in Application Support,
    /// out of the user's sight (`documents/App.sqlite` → `applicationSupport/App.sqlite`): the
    /// upgrade to it relocates the store there first.
    public static func defaultNewestLocation(after store: ContainerLocation) -> ContainerLocation {
        store.root == .documents ? ContainerLocation(.applicationSupport, store.path) : store
    }

    /// The catalog of `model`, its store at `store` (and, in the newest of several versions, at
    /// `newestStore`, by default ``defaultNewestLocation(after:)``). A model version whose
    /// configurations put its entities in several stores gets one store per configuration, at
    /// `configurationStores`' place for it or beside `store` (``defaultLocation(ofConfiguration:beside:)``).
    public static func make(
        from model: CoreDataModel, store: ContainerLocation, newestStore: ContainerLocation? = nil,
        app: String? = nil, options: CoreDataStoreLayout.Options = .init(),
        configurationStores: [String: ContainerLocation] = [:]
    ) throws -> Made {
        var versions: [CatalogVersion] = []
        var schemas: [(String, StoreSchema)] = []
        var notes = model.warnings.map(\.description)
        var names: [String: String] = [:]
        let known = Set(model.versions.flatMap { $0.configurations.map(\.name) })
        for name in configurationStores.keys.sorted() where !known.contains(name) {
            throw Problem.unknownConfiguration(name, known: known.sorted())
        }
        if let newestStore, model.versions.count < 2 {
            notes.append(
                "the model has one version, the one the app shipped: the store stays at \(store), not \(newestStore)")
        }
        for (index, modelVersion) in model.versions.enumerated() {
            let name = catalogName(of: modelVersion.name)
            if let other = names[name] { throw Problem.sameCatalogName(name, versions: [other, modelVersion.name]) }
            names[name] = modelVersion.name
            let layout = try CoreDataStoreLayout(modelVersion, options: options)
            notes += layout.assumptions.map { "\(modelVersion.name): \($0)" }
            let schema = layout.storeSchema()
            // The store of one version's every entity: where the app keeps it; in the newest, where
            // the release being built keeps it.
            let isNewest = index > 0 && index == model.versions.count - 1
            let home = isNewest ? (newestStore ?? defaultNewestLocation(after: store)) : store
            let moved =
                "\(modelVersion.name), the newest version, keeps its store at \(home), out of Documents: the "
                + "upgrade to it relocates \(store) there first (--newest-store LOCATION chooses the place)"
            var stores: [CatalogStore] = []
            func add(_ location: ContainerLocation, _ schema: StoreSchema) {
                let file =
                    "stores/\(name)/\(location.root.rawValue)-\(location.path.replacingOccurrences(of: "/", with: "-")).json"
                schemas.append((file, schema))
                stores.append(CatalogStore(location: location, tables: schema.tableNames, writable: true, schema: file))
            }
            switch Self.configurationStores(
                of: modelVersion, layout: layout, store: store, locations: configurationStores)
            {
            case .success(let parts)?:
                notes.append(configurationAssumption(modelVersion, parts))
                for part in parts { add(part.location, Self.schema(of: part, cutFrom: schema)) }
            case .failure(let problem)?:
                notes.append(configurationNote(modelVersion, store: home, problem: problem))
                add(home, schema)
                if isNewest, home != store, newestStore == nil { notes.append(moved) }
            case nil:
                add(home, schema)
                if isNewest, home != store, newestStore == nil { notes.append(moved) }
            }
            var summary = "Core Data model version \"\(modelVersion.name)\" of \(model.name).xcdatamodeld"
            if modelVersion.name == model.currentVersion { summary += " (current: the app builds with it)" }
            if index > 0 { summary += "; no plan yet: the Core Data migration from the version before is not written" }
            versions.append(CatalogVersion(name: name, summary: summary, stores: stores))
        }
        return Made(
            manifest: CatalogManifest(app: app ?? model.name, versions: versions), schemas: schemas, notes: notes)
    }

    /// What a version whose configurations put entities in two or more stores, yet do not part its
    /// store, is told: the catalog keeps every entity in the one store at `store`, and why.
    static func configurationNote(
        _ version: CoreDataModelVersion, store: ContainerLocation, problem: ConfigurationProblem
    ) -> String {
        let parts = version.configurations.filter { !$0.memberEntities.isEmpty }
        let listed = parts.map { "\($0.name) (\($0.memberEntities.sorted().joined(separator: ", ")))" }
        return "\(version.name): its configurations \(listed.joined(separator: ", ")) put entities in "
            + "\(parts.count) stores, but \(problem); this catalog keeps every entity in the one store \(store) "
            + "and makes no split by configuration"
    }

    /// Writes the catalog of `model` as a new folder at `url` and returns it.
    public static func create(
        at url: URL, from model: CoreDataModel, store: ContainerLocation, newestStore: ContainerLocation? = nil,
        app: String? = nil, options: CoreDataStoreLayout.Options = .init(),
        configurationStores: [String: ContainerLocation] = [:]
    ) throws -> (catalog: CatalogFolder, notes: [String]) {
        let made = try make(
            from: model, store: store, newestStore: newestStore, app: app, options: options,
            configurationStores: configurationStores)
        let catalog = CatalogFolder(creating: url, manifest: made.manifest)
        for (file, schema) in made.schemas { try catalog.write(schema, at: file) }
        try catalog.writeManifest()
        return (catalog, made.notes)
    }
}
