import BackstageModel
import BackstageSystem
import Foundation

/// The launch check of a `migrateSchema` step (``Upgrader/needsUpgrade(_:_:)``).
extension MigrateRun {
    /// Cheap: a `stat`, a 100-byte header read and a tiny stamp file. True when a migration may be pending.
    static func isNeeded(_ step: UpgradeStep.MigrateSchema, in container: AppContainer, fileSystem: FileSystem) -> Bool
    {
        var probe = PlainProbe()
        return isNeeded(step, in: container, fileSystem: fileSystem, probe: &probe)
    }

    static func isNeeded(
        _ step: UpgradeStep.MigrateSchema, in container: AppContainer, fileSystem: FileSystem,
        probe: inout some StoreProbe
    ) -> Bool {
        guard
            let (status, header) = probe.statusAndPrefix(step.store, in: container, count: 100, fileSystem: fileSystem),
            header.count == 100
        else { return false }
        guard let stamp = Stamp.read(step, in: container, fileSystem: fileSystem) else { return true }
        return stamp.device != status.device || stamp.inode != status.inode || cookie(header) < stamp.cookie
    }
}
