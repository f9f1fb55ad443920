import Backstage
import Foundation

/// One version of the sample app's on-disk layout, as `Fixtures/Layouts/<version>.json` describes it.
public struct FixtureLayout: Sendable, Hashable, Codable {
    /// One store of the layout and the tables it holds.
    public struct Store: Sendable, Hashable, Codable {
        public var store: ContainerLocation
        public var tables: [String]
        /// True for the store the app writes notes to (where a killed writer leaves its WAL).
        public var writable: Bool?
    }
    public var version: String
    public var summary: String
    /// The version this one is reached from, and the plan that does it.
    public var from: String?
    public var plan: String?
    public var stores: [Store]

    /// The store the app writes notes to.
    public var writableStore: Store? { stores.first { $0.writable == true } }
}

/// The catalog of the sample "Notes" app: its layouts v1–v4, the upgrade plans between them and the
/// v1 schema, all data in `Fixtures/`. It is also the worked example to copy for your own app.
public enum FixtureCatalog {
    /// The versions, oldest first.
    public static let versions = ["v1", "v2", "v3", "v4"]

    /// The layout of `version`.
    public static func layout(_ version: String) throws -> FixtureLayout {
        try JSONDecoder().decode(FixtureLayout.self, from: data("Layouts/\(version).json"))
    }

    /// The plan named `name`, such as `v1-to-v2`.
    public static func plan(_ name: String) throws -> UpgradePlan {
        try UpgradePlan.load(from: url("Plans/\(name).json"))
    }

    /// The plans that take `from` to `to`, in order (empty when they are the same version).
    public static func chain(from: String, to: String) throws -> [UpgradePlan] {
        guard let start = versions.firstIndex(of: from), let end = versions.firstIndex(of: to), start <= end else {
            throw FixtureError.unknownVersion(from + " → " + to)
        }
        return try versions[(start + 1)..<(end + 1)].map { try plan(try layout($0).plan ?? "") }
    }

    /// The SQL that creates the version-1 store.
    public static func schemaV1() throws -> String {
        String(decoding: try data("Schema/notes-v1.sql"), as: UTF8.self)
    }

    /// The file `relative` of the catalog.
    public static func url(_ relative: String) throws -> URL {
        guard let base = Bundle.module.resourceURL else { throw FixtureError.missingResource(relative) }
        let url = base.appending(path: relative)
        guard FileManager.default.fileExists(atPath: url.path) else { throw FixtureError.missingResource(relative) }
        return url
    }

    private static func data(_ relative: String) throws -> Data {
        try Data(contentsOf: url(relative))
    }
}

/// Why a fixture could not be made.
public enum FixtureError: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownVersion(String)
    case missingResource(String)
    case notEmpty(path: String)
    case invalidSize(String)
    case writerFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case .unknownVersion(let version): "unknown layout version \(version): use v1, v2, v3 or v4"
        case .missingResource(let path): "the fixture catalog has no \(path)"
        case .notEmpty(let path): "\(path) already exists and is not empty; give a new folder"
        case .invalidSize(let text): "\(text) is not a size: write a number with KB, MB or GB, such as 2MB"
        case .writerFailed(let path, let reason): "the fixture writer for \(path) failed: \(reason)"
        }
    }
}
