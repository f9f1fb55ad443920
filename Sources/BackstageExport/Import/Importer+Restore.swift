import Backstage
import Foundation

/// A store snapshot staged from an archive, and where it goes.
struct StagedSnapshot {
    /// The staged snapshot, in the container's temporary folder.
    var staged: ContainerLocation
    /// Where it is restored: the location it came from, or where the app keeps that store now.
    var location: ContainerLocation
    /// The location it came from, as the archive records it.
    var recorded: ContainerLocation
}

extension Importer {
    /// The snapshots staged under `folder` (`<root>/<path>`, with their Core Data support folders),
    /// each checked before anything is written into Documents: its root is one of the container's,
    /// no store is at its location, and it is a database.
    func planRestores(staged folder: String, archivePath: String, plans: [UpgradePlan]) throws -> [StagedSnapshot] {
        guard let base = FileSystem.relativePath(of: folder, inside: container.temporary.path) else { return [] }
        var snapshots: [StagedSnapshot] = []
        for rootName in try fileSystem.contents(of: folder).sorted() {
            let entry = Exporter.databaseFolder + "/" + rootName
            guard let root = ContainerRoot(rawValue: rootName), container.defines(root), root != .temporary else {
                throw ImportError(archivePath: archivePath, entryPath: entry, reason: .unknownStoreLocation)
            }
            for path in try storeFiles(in: folder + "/" + rootName, relative: "") {
                let recorded = ContainerLocation(root, path)
                let entryPath = entry + "/" + path
                let location = try restoreLocation(
                    of: recorded, plans: plans, archivePath: archivePath, entryPath: entryPath)
                guard SQLiteHeader.hasMagic(try fileSystem.readPrefix(folder + "/" + rootName + "/" + path, count: 16))
                else {
                    throw ImportError(archivePath: archivePath, entryPath: entryPath, reason: .unknownStoreLocation)
                }
                // Two snapshots the plans send to one place (an older and a newer store): neither replaces the other.
                if fileSystem.exists(location.filePath(in: container))
                    || snapshots.contains(where: { $0.location == location })
                {
                    throw ImportError(
                        archivePath: archivePath, entryPath: entryPath,
                        reason: .storeExists(location: location.description))
                }
                snapshots.append(
                    StagedSnapshot(
                        staged: ContainerLocation(.temporary, base + "/" + rootName + "/" + path), location: location,
                        recorded: recorded))
            }
        }
        return snapshots
    }

    /// Where the snapshot of the store at `recorded` is restored: where the plans' relocations move
    /// that store, in order (a v1 store in Documents goes where the app keeps it now). One that stays in
    /// Documents goes back there only for a store the container declares there, and that it does not
    /// hold at the same path in Application Support (where `relocate` puts it): that one is the
    /// store's place now (and a store there refuses the restore). Anything else would put an app's
    /// store in Documents, the folder users see: refused.
    private func restoreLocation(
        of recorded: ContainerLocation, plans: [UpgradePlan], archivePath: String, entryPath: String
    ) throws -> ContainerLocation {
        var location = recorded
        for plan in plans {
            for step in plan.steps.compactMap({ $0.as(UpgradeStep.Relocate.self) }) where step.from == location {
                location = step.to
            }
        }
        guard location.root == .documents else { return location }
        let relocated = ContainerLocation(.applicationSupport, location.path)
        if fileSystem.exists(relocated.filePath(in: container)) { return relocated }
        guard container.declaredStores.declares(location.path) else {
            throw ImportError(
                archivePath: archivePath, entryPath: entryPath,
                reason: .restoreIntoDocuments(location: recorded.description))
        }
        return location
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
            if snapshot.location != snapshot.recorded {
                report.restoredElsewhere.append(
                    .init(from: snapshot.recorded.description, to: snapshot.location.description))
            }
        }
    }
}
