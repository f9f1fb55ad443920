import BackstageSystem
import Foundation

/// The one rule for what quarantine takes out of a folder: orphan sidecars, Backstage temporaries
/// and Core Data support folders without their database (a user's database's is the user's). The classifier names each file by it
/// (`scan`), and the launch check asks the same rule of a name's bytes (`mayBeStray`), without
/// building a string.
extension FileClassifier {
    /// The end of a Core Data support folder's name: `.<Store>_SUPPORT`.
    static let supportFolderSuffix = "_SUPPORT"
    /// The sidecars, kept once: `Sidecar.allCases` builds a new array at every call.
    private static let sidecars = Sidecar.allCases

    /// True for `.Name_SUPPORT`, Core Data's folder of external binary data for store `Name`.
    public static func isCoreDataSupportFolder(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { isCoreDataSupportFolder($0) }
    }

    /// ``isCoreDataSupportFolder(_:)`` of a name's bytes.
    static func isCoreDataSupportFolder(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        name.first == UInt8(ascii: ".") && name.count > 1 + supportFolderSuffix.utf8.count
            && name.endsWith(supportFolderSuffix)
    }

    /// Splits `Notes.sqlite-wal` into `("Notes.sqlite", .wal)`.
    public static func splitSidecar(_ name: String) -> (base: String, sidecar: Sidecar)? {
        var copy = name
        guard let sidecar = copy.withUTF8({ sidecar(of: $0) }) else { return nil }
        return (String(decoding: name.utf8.dropLast(sidecar.rawValue.utf8.count), as: UTF8.self), sidecar)
    }

    /// The sidecar a name's bytes end with (`-wal`, `-shm`, `-journal`), after at least one byte.
    static func sidecar(of name: UnsafeBufferPointer<UInt8>) -> Sidecar? {
        for sidecar in sidecars where name.count > sidecar.rawValue.utf8.count && name.endsWith(sidecar.rawValue) {
            return sidecar
        }
        return nil
    }

    /// False when a file or folder named `name` can never be one of the ``strays(in:)``: they
    /// are all orphan sidecars, Backstage temporaries or Core Data support folders, each known by
    /// its name before its bytes. The launch check's filter: it allocates nothing.
    package static func mayBeStray(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        sidecar(of: name) != nil || isCoreDataSupportFolder(name) || TemporaryName.isTemporary(name)
    }

    /// The internal files among `entries` that belong to no store: orphan sidecars, Backstage
    /// temporaries, support folders without their database. What quarantine takes.
    package static func strays(in entries: [ClassifiedFile]) -> [ClassifiedFile] {
        // The stores' support folders, once: a support folder looks itself up (a million entries
        // are one pass, not a pass each). A user's database's is never a stray: the classifier
        // calls it the user's (`userDatabaseSupport`).
        let stores = Set(entries.filter { $0.kind == .database }.map { supportFolderPath(ofStore: $0.path) })
        return entries.filter { entry in
            switch entry.kind {
            case .orphanSidecar, .backstageTemporary: true
            case .coreDataSupport: !stores.contains(entry.path)
            default: false
            }
        }
    }

    /// `folder/Notes.sqlite` → `folder/.Notes_SUPPORT`, by ``StoreFileSet/supportFolderName(ofStoreNamed:)``.
    private static func supportFolderPath(ofStore path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let name = StoreFileSet.supportFolderName(ofStoreNamed: (path as NSString).lastPathComponent)
        return folder.isEmpty ? name : folder + "/" + name
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// True when these bytes end with `suffix`'s UTF-8 bytes.
    func endsWith(_ suffix: String) -> Bool {
        let tail = suffix.utf8
        return count >= tail.count && self[(count - tail.count)...].elementsEqual(tail)
    }
}
