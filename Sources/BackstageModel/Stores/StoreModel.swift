import BackstageSystem
/// Which tables live in which configuration, like the configurations of a Core Data model:
/// user data in one store, rebuildable caches in another.
///
/// ```swift
/// let model = StoreModel(["UserData": ["folder", "note"], "Cache": ["thumbnail"]])
/// model.configuration(forTable: "thumbnail")  // "Cache"
/// ```
public struct StoreModel: Sendable, Hashable, Codable {
    /// Table names by configuration name.
    public var configurations: [String: Set<String>]

    /// Creates a model from table names by configuration.
    public init(_ configurations: [String: [String]]) {
        self.configurations = configurations.mapValues(Set.init)
    }

    /// The configuration that holds `table`, if any.
    public func configuration(forTable table: String) -> String? {
        configurations.first { $0.value.contains(table) }?.key
    }
}
