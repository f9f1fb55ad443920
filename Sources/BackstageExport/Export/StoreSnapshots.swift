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
    }

    let scratch: String
    let fileSystem: FileSystem
    private(set) var files: [File] = []

    var bytes: Int64 { files.reduce(0) { $0 + $1.size } }

    init(container: AppContainer, fileSystem: FileSystem) throws {
        self.fileSystem = fileSystem
        scratch = container.temporary.path + "/" + TemporaryName.unique("export")
        try fileSystem.createDirectories(scratch)
        do {
            for root in [ContainerRoot.documents, .applicationSupport, .caches] {
                let folder = container[root]
                for entry in try FileClassifier().scan(folder) where entry.kind == .database && !entry.path.hasPrefix(".backstage/") {
                    let live = folder.appending(path: entry.path)
                    let snapshot = scratch + "/\(files.count).sqlite"
                    try StoreSnapshot.write(of: live, to: URL(filePath: snapshot))
                    guard let status = try fileSystem.status(snapshot), let liveStatus = try fileSystem.status(live.path) else { continue }
                    files.append(File(location: ContainerLocation(root, entry.path), snapshot: snapshot, size: status.size,
                                      modified: Int64(liveStatus.modificationTime.tv_sec)))
                }
            }
        } catch {
            remove()
            throw error
        }
    }

    func remove() {
        try? fileSystem.removeTree(scratch)
    }
}
