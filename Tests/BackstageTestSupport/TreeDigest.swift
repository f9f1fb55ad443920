import Foundation

/// Every entry under `root` as it is on disk, by path: a file's bytes, a symbolic link's target
/// (the launch record is one), a folder's existence. Unlike ``snapshot(_:)-(URL)``, which reads
/// regular files only, two equal digests mean nothing under `root` was written, added or removed.
/// SQLite's `-shm` files are left out unless `includingSharedMemory`: they are the shared-memory
/// index every connection to a WAL store writes while it reads, not a store's data.
public func treeDigest(_ root: URL, includingSharedMemory: Bool = false) -> [String: String] {
    var result: [String: String] = [:]
    let manager = FileManager.default
    guard let enumerator = manager.enumerator(atPath: root.path) else { return result }
    for case let path as String in enumerator {
        if !includingSharedMemory && path.hasSuffix("-shm") { continue }
        let full = root.appending(path: path).path
        guard let attributes = try? manager.attributesOfItem(atPath: full) else { continue }
        switch attributes[.type] as? FileAttributeType {
        case .typeSymbolicLink?: result[path] = "link " + ((try? manager.destinationOfSymbolicLink(atPath: full)) ?? "?")
        case .typeDirectory?: result[path] = "folder"
        default:
            let data = manager.contents(atPath: full) ?? Data()
            // FNV-1a of the bytes: a digest short enough to print when two differ.
            let hash = data.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
            result[path] = "file \(data.count) bytes, fnv \(String(hash, radix: 16))"
        }
    }
    return result
}
