import Foundation
import GRDB

/// Every store a split makes from a Core Data store is a store of its own: its `Z_METADATA` names
/// its own store UUID (`Z_UUID`, and the plist's `NSStoreUUID` where it has one).
///
/// Core Data identifies a persistent store by that UUID (its object IDs' URIs are
/// `x-coredata://UUID/Entity/p7`), and a coordinator given two stores of one UUID tells them apart by
/// nothing. The split's first target keeps the source's UUID (the URIs an app saved elsewhere
/// still resolve for its entities); every other target gets one derived from the source's UUID and
/// the target's place in the container, so a split built again after a crash writes the same one.
enum SplitStoreIdentity {
    /// The UUID of target `location` of a split of the store whose UUID is `source`.
    static func uuid(derivedFrom source: String, for location: String) -> String {
        var bytes: [UInt8] = []
        for half in 0..<2 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325 &+ UInt64(half)
            for byte in Array("\(source)\u{0}\(location)\u{0}\(half)".utf8) {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: hash >> shift)) }
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // name-based
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
        let hex = bytes.map { String(format: "%02X", $0) }.joined()
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(
                hex[
                    hex.index(
                        hex.startIndex, offsetBy: range.lowerBound)..<hex.index(
                            hex.startIndex, offsetBy: range.upperBound)])
        }
        return parts.joined(separator: "-")
    }

    /// Gives the Core Data store attached as `schema` a UUID of its own, derived for `location`:
    /// `Z_UUID`, where Core Data keeps it, and the plist's `NSStoreUUID` when the plist has one
    /// (the stores Apple's apps and Core Data write have none; Backstage's fixtures do). Nothing
    /// when it has no `Z_METADATA` (not a Core Data store) or its plist is not Core Data's.
    /// - returns: The UUID written, nil when none was.
    @discardableResult
    static func renew(_ db: Database, schema: String, location: String) throws -> String? {
        let table = "\(schema).Z_METADATA"
        guard
            try Bool.fetchOne(
                db, sql: "SELECT count(*) > 0 FROM \(schema).sqlite_master WHERE type = 'table' AND name = 'Z_METADATA'"
            )
                == true,
            let row = try Row.fetchOne(db, sql: "SELECT Z_VERSION, Z_UUID, Z_PLIST FROM \(table)"),
            let data = row["Z_PLIST"] as Data?,
            var plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)
                as? [String: Any]
        else { return nil }
        let source = (row["Z_UUID"] as String?) ?? (plist["NSStoreUUID"] as? String) ?? ""
        let uuid = uuid(derivedFrom: source, for: location)
        var rewritten = data
        if plist["NSStoreUUID"] != nil {
            plist["NSStoreUUID"] = uuid
            guard let encoded = try MetadataPlistValue.binary(plist) else { return nil }
            rewritten = encoded
        }
        let version: Int64 = row["Z_VERSION"]
        try db.execute(
            sql: "UPDATE \(table) SET Z_UUID = ?, Z_PLIST = ? WHERE Z_VERSION = ?",
            arguments: [uuid, rewritten, version])
        return uuid
    }
}
