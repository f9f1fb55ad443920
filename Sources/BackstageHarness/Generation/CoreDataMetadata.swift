import Foundation

/// What Core Data keeps in `Z_METADATA.Z_PLIST`, under its own key names.
struct CoreDataMetadata: Encodable {
    var NSStoreModelVersionHashes: [String: Data]
    var NSStoreModelVersionIdentifiers: [String]
    var NSStoreType: String
    var NSStoreUUID: String
    var _NSAutoVacuumLevel: String
}
