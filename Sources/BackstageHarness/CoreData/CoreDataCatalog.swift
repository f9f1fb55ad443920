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

        public var description: String {
            switch self {
            case .sameCatalogName(let name, let versions):
                "model versions \(versions.joined(separator: " and ")) both become catalog version \(name): rename one"
            }
        }
    }

    /// What ``make(from:store:app:options:)`` gives: the manifest, each store's schema file and
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

    /// The catalog of `model`, its store at `store`.
    public static func make(
        from model: CoreDataModel, store: ContainerLocation, app: String? = nil,
        options: CoreDataStoreLayout.Options = .init()
    ) throws -> Made {
        var versions: [CatalogVersion] = []
        var schemas: [(String, StoreSchema)] = []
        var notes = model.warnings.map(\.description)
        var names: [String: String] = [:]
        for (index, modelVersion) in model.versions.enumerated() {
            let name = catalogName(of: modelVersion.name)
            if let other = names[name] { throw Problem.sameCatalogName(name, versions: [other, modelVersion.name]) }
            names[name] = modelVersion.name
            let layout = try CoreDataStoreLayout(modelVersion, options: options)
            notes += layout.assumptions.map { "\(modelVersion.name): \($0)" }
            if let note = configurationNote(modelVersion, store: store) { notes.append(note) }
            let schema = layout.storeSchema()
            let file =
                "stores/\(name)/\(store.root.rawValue)-\(store.path.replacingOccurrences(of: "/", with: "-")).json"
            schemas.append((file, schema))
            var summary = "Core Data model version \"\(modelVersion.name)\" of \(model.name).xcdatamodeld"
            if modelVersion.name == model.currentVersion { summary += " (current: the app builds with it)" }
            if index > 0 { summary += "; no plan yet: the Core Data migration from the version before is not written" }
            versions.append(
                CatalogVersion(
                    name: name, summary: summary,
                    stores: [
                        CatalogStore(location: store, tables: schema.tableNames, writable: true, schema: file)
                    ]))
        }
        return Made(
            manifest: CatalogManifest(app: app ?? model.name, versions: versions), schemas: schemas, notes: notes)
    }

    /// What a version whose configurations put entities in two or more stores is told: the catalog
    /// keeps every entity in the one store at `store`, and no split by configuration is made (nil
    /// when the version has one configuration or none).
    static func configurationNote(_ version: CoreDataModelVersion, store: ContainerLocation) -> String? {
        let parts = version.configurations.filter { !$0.memberEntities.isEmpty }
        guard parts.count > 1 else { return nil }
        let listed = parts.map { "\($0.name) (\($0.memberEntities.sorted().joined(separator: ", ")))" }
        return "\(version.name): its configurations \(listed.joined(separator: ", ")) put entities in "
            + "\(parts.count) stores; this catalog keeps every entity in the one store \(store) and makes no "
            + "split by configuration: add a split step to the plan that moves each configuration's tables "
            + "into its own store"
    }

    /// Writes the catalog of `model` as a new folder at `url` and returns it.
    public static func create(
        at url: URL, from model: CoreDataModel, store: ContainerLocation, app: String? = nil,
        options: CoreDataStoreLayout.Options = .init()
    ) throws -> (catalog: CatalogFolder, notes: [String]) {
        let made = try make(from: model, store: store, app: app, options: options)
        let catalog = CatalogFolder(creating: url, manifest: made.manifest)
        for (file, schema) in made.schemas { try catalog.write(schema, at: file) }
        try catalog.writeManifest()
        return (catalog, made.notes)
    }
}
