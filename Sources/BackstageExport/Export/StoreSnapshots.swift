import Backstage
import Foundation

/// Snapshots of every store of a container, made with the backup API in a scratch folder of
/// the container's temporary folder, for ``ExportOptions/includeDatabase``.
struct StoreSnapshots {
    struct File {
        var location: ContainerLocation
        var snapshot: String
        var size: Int64
        var modified: Int64
        /// Core Data's external data of the store (`.Name_SUPPORT/`), archived beside the snapshot:
        /// rows refer to these files by name, so a snapshot without them loses every large blob.
        var supportFiles: [SupportFile] = []
    }

    struct SupportFile {
        /// The live file (Core Data writes each once and never changes it).
        var path: String
        /// Its path relative to the store's folder: `.Notes_SUPPORT/_EXTERNAL_DATA/<uuid>`.
        var relative: String
        var size: Int64
        var modified: Int64
    }

    let scratch: String
    let fileSystem: FileSystem
    private(set) var files: [File] = []

    var bytes: Int64 { files.reduce(0) { $0 + $1.size + $1.supportFiles.reduce(0) { $0 + $1.size } } }

    /// Entries the snapshots add to an archive.
    var entryCount: Int { files.reduce(0) { $0 + 1 + $1.supportFiles.count } }

    init(container: AppContainer, fileSystem: FileSystem) throws {
        self.fileSystem = fileSystem
        scratch = container.temporary.path + "/" + TemporaryName.unique("export")
        try fileSystem.createDirectories(scratch)
        do {
            for root in container.roots where root != .temporary {
                let folder = container[root]
                let declarations = root == .documents ? container.declaredStores : .everyDatabase
                // Only the stores are kept: a million documents cost one folder's names.
                for entry in try FileClassifier(declarations: declarations).scan(
                    folder, keeping: { $0.kind == .database && !$0.path.hasPrefix(".backstage/") })
                {
                    let live = folder.appending(path: entry.path)
                    let snapshot = scratch + "/\(files.count).sqlite"
                    try StoreSnapshot.write(of: live, to: URL(filePath: snapshot))
                    guard let status = try fileSystem.status(snapshot),
                        let liveStatus = try fileSystem.status(live.path)
                    else { continue }
                    let store = StoreFileSet(main: live)
                    files.append(
                        File(
                            location: ContainerLocation(root, entry.path), snapshot: snapshot, size: status.size,
                            modified: Int64(liveStatus.modificationTime.tv_sec),
                            supportFiles: try supportFiles(of: store)))
                }
            }
        } catch {
            remove()
            throw error
        }
    }

    /// The regular files of the store's support folder, in sorted order (read after the snapshot,
    /// so every file a snapshot row names is there).
    private func supportFiles(of store: StoreFileSet) throws -> [SupportFile] {
        var result: [SupportFile] = []
        func walk(_ path: String, _ relative: String) throws {
            guard let status = try fileSystem.status(path) else { return }
            switch status.kind {
            case .directory:
                for name in try fileSystem.contents(of: path) { try walk(path + "/" + name, relative + "/" + name) }
            case .regular:
                result.append(
                    SupportFile(
                        path: path, relative: relative, size: status.size,
                        modified: Int64(status.modificationTime.tv_sec)))
            case .symlink, .other:
                break
            }
        }
        try walk(store.supportFolder.path, store.supportFolder.lastPathComponent)
        return result
    }

    func remove() {
        try? fileSystem.removeTree(scratch)
    }
}
