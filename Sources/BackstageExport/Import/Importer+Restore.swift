import Backstage
import Foundation

/// A store snapshot staged from an archive, and where it goes.
struct StagedSnapshot {
    /// The staged snapshot, in the container's temporary folder.
    var staged: ContainerLocation
    /// The location it came from, where it is restored.
    var location: ContainerLocation
}

extension Importer {
    /// The snapshots staged under `folder` (`<root>/<path>`, with their Core Data support folders),
    /// each checked before anything is written into Documents: its root is one of the container's,
    /// no store is at its location, and it is a database.
    func planRestores(staged folder: String, archivePath: String) throws -> [StagedSnapshot] {
        guard let base = FileSystem.relativePath(of: folder, inside: container.temporary.path) else { return [] }
        var snapshots: [StagedSnapshot] = []
        for rootName in try fileSystem.contents(of: folder).sorted() {
            let entry = Exporter.databaseFolder + "/" + rootName
            guard let root = ContainerRoot(rawValue: rootName), container.defines(root), root != .temporary else {
                throw ImportError(archivePath: archivePath, entryPath: entry, reason: .unknownStoreLocation)
            }
            for path in try storeFiles(in: folder + "/" + rootName, relative: "") {
                let location = ContainerLocation(root, path)
                let entryPath = entry + "/" + path
                guard SQLiteHeader.hasMagic(try fileSystem.readPrefix(folder + "/" + rootName + "/" + path, count: 16))
                else {
                    throw ImportError(archivePath: archivePath, entryPath: entryPath, reason: .unknownStoreLocation)
                }
                if fileSystem.exists(location.filePath(in: container)) {
                    throw ImportError(
                        archivePath: archivePath, entryPath: entryPath,
                        reason: .storeExists(location: location.description))
                }
                snapshots.append(
                    StagedSnapshot(
                        staged: ContainerLocation(.temporary, base + "/" + rootName + "/" + path), location: location))
            }
        }
        return snapshots
    }

    /// The main files staged under `folder`: everything but Core Data support folders.
    private func storeFiles(in folder: String, relative: String) throws -> [String] {
        var result: [String] = []
        for name in try fileSystem.contents(of: folder).sorted() where !FileClassifier.isCoreDataSupportFolder(name) {
            let path = relative.isEmpty ? name : relative + "/" + name
            switch try fileSystem.status(folder + "/" + name)?.kind {
            case .directory: result += try storeFiles(in: folder + "/" + name, relative: path)
            case .regular: result.append(path)
            default: break
            }
        }
        return result
    }

    /// Moves each staged snapshot to its location as a relocation moves a store: journaled, under
    /// the store's lock, renamed on one file system, copied, fsynced and verified across two.
    func restore(_ snapshots: [StagedSnapshot], report: inout ImportReport) throws {
        let context = StepContext(container: container, fileSystem: fileSystem, logger: logger, busyTimeout: 5)
        var relocation = RelocationReport()
        for snapshot in snapshots {
            try context.relocateStore(snapshot.staged, to: snapshot.location, strategy: .auto, report: &relocation)
            report.restoredDatabases.append(snapshot.location.description)
        }
    }
}
