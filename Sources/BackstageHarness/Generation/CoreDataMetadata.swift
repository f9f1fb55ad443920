import Foundation

/// What Core Data keeps in `Z_METADATA.Z_PLIST`, under its own key names: the keys of the stores of
/// `coredata-models/` (the store UUID is `Z_METADATA.Z_UUID`, not a plist key), the framework version
/// only when a captured store gave it.
struct CoreDataMetadata: Encodable {
    var NSPersistenceFrameworkVersion: Int?
    var NSStoreModelVersionHashes: [String: Data]
    /// 3 in every real store here.
    var NSStoreModelVersionHashesVersion = 3
    var NSStoreModelVersionIdentifiers: [String]
    var NSStoreType: String
    var _NSAutoVacuumLevel: String
}
