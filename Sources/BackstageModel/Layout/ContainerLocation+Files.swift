import BackstageSystem
import Foundation

extension ContainerLocation {
    /// The location as a device's file system compares it: root, then the path without empty or
    /// `.` components, without case (Apple file systems are case-insensitive by default).
    package var fileKey: String {
        rootKey + "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/").lowercased()
    }

    private var rootKey: String { root.rawValue }

    /// Why the location cannot be a store's: a root or a folder (the step would move or open a
    /// whole folder), a sidecar of another store, or a name too long for a store
    /// (``ContainerLocation/storeNameTooLong``). Nil for a store's location.
    package var notAStore: String? {
        let name = path.split(separator: "/").last { $0 != "." }.map(String.init) ?? ""
        if name.isEmpty || path.hasSuffix("/") {
            return "names \(self), a folder: a store's location names its database file"
        }
        for suffix in ["-wal", "-shm", "-journal"] where name.hasSuffix(suffix) {
            return "names \(self), a sidecar (\(suffix)) of another store: a store's location names its database file"
        }
        return storeNameTooLong
    }

    /// True when both locations name one file on a device.
    package func sameFile(as other: ContainerLocation) -> Bool { fileKey == other.fileKey }
}
