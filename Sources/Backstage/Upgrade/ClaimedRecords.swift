import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation

/// The two records under `applicationSupport/.backstage` that a run replaces before its first step
/// has changed the storage: the downgrade guard (`versions`), claimed before the first step that
/// has work, and the launch record (`launch`), withdrawn by the step's first journal write. A run
/// refused there, having changed nothing (the store in use, a check inside the step), puts both
/// back as they were, so that it leaves the container byte-identical: a refusal writes nothing.
///
/// Putting them back is what was there before the run, and nothing the run did is undone by it:
/// it is done only once the refused step cleared its journal (undone) and no step of the run had
/// completed. A guard left claimed would still be safe (it only makes an older build refuse).
struct ClaimedRecords {
    /// The guard's bytes, nil when there was none.
    private let guardBytes: [UInt8]?
    /// What was at the launch record's path.
    private let launch: Launch

    private enum Launch {
        case absent
        case link(String)
        /// Something other than a link (damage): it is not put back; the next complete run writes
        /// the record again.
        case other
    }

    /// Reads the records as they are before the run claims anything.
    init(_ container: AppContainer, fileSystem: FileSystem) throws(FileSystemError) {
        let guardPath = DowngradeGuard.path(in: container)
        guardBytes = fileSystem.exists(guardPath) ? try fileSystem.readFile(guardPath) : nil
        let path = container.launchRecordPath
        if let target = fileSystem.withLink(path, { String(decoding: $0, as: UTF8.self) }) {
            launch = .link(target)
        } else {
            launch = fileSystem.exists(path) ? .other : .absent
        }
    }

    /// Puts the records back as they were read, when the run left no journal (its step was undone).
    func restore(_ container: AppContainer, fileSystem: FileSystem) throws(FileSystemError) {
        guard !JournalFile.isWaiting(in: container, fileSystem: fileSystem) else { return }
        let guardPath = DowngradeGuard.path(in: container)
        if let guardBytes {
            if (try? fileSystem.readFile(guardPath)) != guardBytes {
                try fileSystem.writeAtomically(guardBytes, to: guardPath)
            }
        } else if fileSystem.exists(guardPath) {
            try fileSystem.removeFile(guardPath)
            try fileSystem.syncDirectory(container.backstageDirectory.path)
        }
        let path = container.launchRecordPath
        switch launch {
        case .link(let target):
            if fileSystem.withLink(path, { String(decoding: $0, as: UTF8.self) }) != target {
                try fileSystem.writeLinkAtomically(target, to: path)
            }
        case .absent, .other: break
        }
    }
}
