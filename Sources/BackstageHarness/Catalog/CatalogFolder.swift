import Backstage
import Foundation

/// A catalog on disk: its folder and its manifest, with the files the manifest names.
///
/// For example:
///
/// ```swift
/// let catalog = try CatalogFolder(at: URL(filePath: "Cookbook"))
/// let schema = try catalog.schema(of: catalog.manifest.versions[0].stores[0])
/// ```
public struct CatalogFolder: Sendable {
    /// The name of the manifest file in a catalog folder.
    public static let manifestName = "catalog.json"

    public let url: URL
    public var manifest: CatalogManifest

    /// Reads the catalog at `url`.
    ///
    /// - throws: ``CatalogError`` naming the file when the manifest is missing, unreadable, or of a
    ///   newer format.
    public init(at url: URL) throws {
        self.url = url
        let file = url.appending(path: Self.manifestName)
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw CatalogError.unreadable(
                path: file.path, reason: "no \(Self.manifestName) there (create one with `backstage catalog init`)")
        }
        manifest = try Self.decodeManifest(data, file: file)
    }

    /// The manifest in `data`, read strictly: a syntax error at its line and column (a truncated
    /// file says so), a newer format refused before anything else, then every key and field.
    private static func decodeManifest(_ data: Data, file: URL) throws -> CatalogManifest {
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: data)
        } catch {
            throw CatalogError.invalid(path: file.path, reason: error.description)
        }
        guard case .number(let text)? = document["format"] else {
            let reason =
                document["format"] == nil
                ? "it has no \"format\" version (this Backstage writes 1)" : "\"format\" is not a whole number"
            throw CatalogError.invalid(path: file.path, reason: reason)
        }
        guard let format = Int(text) else {
            throw CatalogError.invalid(path: file.path, reason: "\"format\" \(text) is not a whole number")
        }
        guard format <= CatalogManifest.currentFormat else {
            throw CatalogError.newerFormat(path: file.path, format: format, supported: CatalogManifest.currentFormat)
        }
        let manifest: CatalogManifest
        do {
            manifest = try StrictDecoding.decode(CatalogManifest.self, from: data, document: document)
        } catch {
            throw CatalogError.invalid(path: file.path, reason: error.description)
        }
        if let problem = manifest.fieldProblems.first { throw CatalogError.invalid(path: file.path, reason: problem) }
        return manifest
    }

    /// The sample Notes app's catalog (versions v1–v4), bundled with Backstage: what every command
    /// uses without `--catalog`, and a worked example of the format.
    public static func notes() throws -> CatalogFolder {
        guard let base = Bundle.module.resourceURL else {
            throw CatalogError.unreadable(path: "Notes", reason: "the bundled catalog is missing")
        }
        return try CatalogFolder(at: base.appending(path: "Notes"))
    }

    /// The catalog at `url`, or the bundled Notes catalog when `url` is nil.
    public static func at(_ url: URL?) throws -> CatalogFolder {
        try url.map { try CatalogFolder(at: $0) } ?? notes()
    }

    /// A new catalog to be written at `url`.
    public init(creating url: URL, manifest: CatalogManifest) {
        self.url = url
        self.manifest = manifest
    }

    /// The version named `name`.
    public func version(_ name: String) throws -> CatalogVersion {
        guard let version = manifest.versions.first(where: { $0.name == name }) else {
            throw CatalogError.unknownVersion(name, known: manifest.versions.map(\.name))
        }
        return version
    }

    /// The schema and statistics of `store`.
    public func schema(of store: CatalogStore) throws -> StoreSchema {
        let file = url.appending(path: store.schema)
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw CatalogError.missingFile(path: file.path, what: "the schema of \(store.location)")
        }
        let schema: StoreSchema
        do {
            schema = try StrictDecoding.decode(StoreSchema.self, from: data)
        } catch {
            throw CatalogError.invalidSchema(path: file.path, reason: error.description)
        }
        if let problem = schema.fieldProblems.first {
            throw CatalogError.invalidSchema(path: file.path, reason: problem)
        }
        return schema
    }

    /// The plan file that reaches `version` from the one before, nil for the first version.
    public func planURL(of version: CatalogVersion) -> URL? {
        version.plan.map { url.appending(path: $0) }
    }

    /// The plans that take `from` to `to`, in order, with the files that hold them.
    public func chain(from: String, to: String) throws -> [(plan: UpgradePlan, file: URL)] {
        let names = manifest.versions.map(\.name)
        guard let start = names.firstIndex(of: from) else { throw CatalogError.unknownVersion(from, known: names) }
        guard let end = names.firstIndex(of: to) else { throw CatalogError.unknownVersion(to, known: names) }
        guard start <= end else { throw CatalogError.wrongOrder(from: from, to: to) }
        return try manifest.versions[(start + 1)..<(end + 1)].map { version in
            guard let file = planURL(of: version) else { throw CatalogError.missingPlan(version: version.name) }
            var plan = try UpgradePlan.load(from: file)
            if plan.version == nil { plan.version = version.name }
            return (plan, file)
        }
    }

    /// The App Groups the app's stores and plans name (`group.com.example.notes`), sorted.
    public var appGroups: [String] {
        var groups = Set(manifest.versions.flatMap { $0.stores.compactMap(\.location.root.appGroupIdentifier) })
        for version in manifest.versions {
            guard let file = planURL(of: version), let plan = try? UpgradePlan.load(from: file) else { continue }
            groups.formUnion(plan.steps.flatMap(\.locations).compactMap(\.root.appGroupIdentifier))
        }
        return groups.sorted()
    }

    /// The stores in Documents that any version of the app keeps or any of its plans names: the
    /// app's own, whatever their header. Every other database in Documents is the user's.
    public var declaredStores: StoreDeclarations {
        var declarations = StoreDeclarations(
            manifest.versions.flatMap(\.stores).map(\.location).filter { $0.root == .documents }.map(\.path))
        for version in manifest.versions {
            guard let file = planURL(of: version), let plan = try? UpgradePlan.load(from: file) else { continue }
            declarations = declarations.adding(StoreDeclarations(plan: plan))
        }
        return declarations
    }

    /// The simulated iOS container of this app at `root`, with its App Groups' shared containers
    /// (see `AppContainer.iOSSandbox(root:appGroups:)`) and its ``declaredStores``.
    public func container(at root: URL) -> AppContainer {
        AppContainer.iOSSandbox(root: root, appGroups: appGroups).declaringStores(declaredStores)
    }

    /// Writes the manifest (sorted keys, indented: catalogs are reviewed in diffs).
    public func writeManifest() throws {
        try Self.write(manifest, to: url.appending(path: Self.manifestName))
    }

    /// Writes `schema` at `relative` in the catalog folder.
    public func write(_ schema: StoreSchema, at relative: String) throws {
        try Self.write(schema, to: url.appending(path: relative))
    }

    static func write(_ value: some Encodable, to file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try (encoder.encode(value) + Data("\n".utf8)).write(to: file, options: .atomic)
    }
}

/// Why a catalog could not be read or used.
public enum CatalogError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The catalog file cannot be read.
    case unreadable(path: String, reason: String)
    /// The catalog file is not a valid catalog: a syntax error, an unknown key, a field without a
    /// usable value, two versions of one name.
    case invalid(path: String, reason: String)
    /// A store's schema file is not a valid schema.
    case invalidSchema(path: String, reason: String)
    /// A file the catalog names is missing.
    case missingFile(path: String, what: String)
    /// A version of that name is already in the catalog.
    case duplicateVersion(String, catalog: String)
    /// A file the catalog does not hold (a store, a `--expect` script) cannot be read.
    case unreadableFile(path: String, reason: String)
    /// A name the catalog would turn into a file name, such as a version's, is not usable.
    case invalidName(String, reason: String)
    case newerFormat(path: String, format: Int, supported: Int)
    case unknownVersion(String, known: [String])
    case wrongOrder(from: String, to: String)
    case missingPlan(version: String)
    case exists(path: String)
    case shipped(version: String, newest: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): "cannot read the catalog file \(path): \(reason)"
        case .invalid(let path, let reason): "the catalog file \(path) is not valid: \(reason)"
        case .invalidSchema(let path, let reason): "\(path) is not a valid store schema: \(reason)"
        case .missingFile(let path, let what): "\(path), \(what), is missing"
        case .duplicateVersion(let name, let catalog):
            "\(catalog) already has a version \(name) (replace it, while it has not shipped, with --replace)"
        case .invalidName(let name, let reason): "\(name) \(reason)"
        case .unreadableFile(let path, let reason): "cannot read \(path): \(reason)"
        case .newerFormat(let path, let format, let supported):
            "\(path) is a catalog of format \(format); this Backstage reads up to \(supported)"
        case .unknownVersion(let name, let known):
            "the catalog has no version \(name)\(NearestName.didYouMean(name, among: known)) (it has \(known.joined(separator: ", ")))"
        case .wrongOrder(let from, let to):
            "\(from) is newer than \(to): an upgrade goes from an older version to a newer one"
        case .missingPlan(let version): "version \(version) names no plan to reach it"
        case .exists(let path): "\(path) already holds a catalog; add versions with `backstage catalog add-version`"
        case .shipped(let version, let newest):
            "\(version) has shipped (\(newest) follows it) and never changes: a correction ships as a new version (`backstage catalog add-version`)"
        }
    }
}
