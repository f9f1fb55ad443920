import BackstageModel
import BackstageSystem
import Foundation

extension StepContext {
    /// The move of the store at `source` to `destination`, with this context's journal and quarantine.
    func move(_ source: ContainerLocation, _ destination: ContainerLocation) -> StoreMove {
        StoreMove(
            container: container, fileSystem: fileSystem, journal: journal, quarantine: quarantine, source: source,
            destination: destination, busyTimeout: busyTimeout, logger: logger)
    }

    /// Moves the store at `source` to `destination` as a `relocate` step does, for a caller that
    /// holds the container's run lock itself (an import restoring its snapshots).
    package func relocateStore(
        _ source: ContainerLocation, to destination: ContainerLocation, strategy: RelocationStrategy,
        report: inout RelocationReport
    ) throws {
        let step = RelocateStep(context: self, source: source, destination: destination, strategy: strategy)
        report.add(try step.run(observing: observer(for: step.subject)))
    }
}

/// A `relocate` step: moves the store at `source` to `destination` with every relocation invariant
/// (``StoreMove``). A store already at the destination is a conflict: the source goes to quarantine
/// instead, and both are kept; unless `olderDestination` tells that the store there is an older
/// copy than the source (a later Core Data migration of the plan knows the source's version and not
/// its), which then goes to quarantine, and the source moves. Stale sidecars at the destination are
/// quarantined first (SQLite would splice them in).
package struct RelocateStep: JournaledStep {
    package static let kind = StepKind.relocate
    let context: StepContext
    let source: ContainerLocation
    let destination: ContainerLocation
    let strategy: RelocationStrategy
    /// Why the store at the destination (its path, second) is older than the one at the source
    /// (first); nil when it is not, or cannot be told.
    var olderDestination: ((String, String) -> String?)? = nil

    package var subject: String { source.path }

    /// What the step moved (`moved`), or set aside (`quarantined`: stale files, a conflict).
    package func run(observing observer: MoveObserver) throws -> RelocationReport {
        var report = RelocationReport()
        var target = destination
        let quarantine = context.quarantine
        let present = StoreFileSet(main: target.url(in: context.container))
        let sourcePath = source.url(in: context.container).path
        if context.fileSystem.exists(present.main.path),
            let why = olderDestination?(sourcePath, present.main.path)
        {
            // Neither copy may be open elsewhere: the older one is renamed away before the move
            // takes the source's lock, and would be renamed under its reader.
            var holders: Set<Int32> = []
            for set in [present, StoreFileSet(main: URL(filePath: sourcePath))] {
                for file in [set.main] + Sidecar.allCases.map(set.sidecar) where context.fileSystem.exists(file.path) {
                    do {
                        holders.formUnion(try context.fileSystem.otherProcessesHolding(file.path))
                    } catch {
                        throw BackstageError(error, path: file.path, during: .relocating)
                    }
                }
            }
            if !holders.isEmpty {
                throw BackstageError(
                    .storeHeldOpen(processes: holders.sorted()), path: present.main.path, during: .relocating)
            }
            context.logger.warning(
                "store in both places; the destination's is the older copy and goes to quarantine",
                metadata: ["store": "\(destination)", "why": "\(why)"])
            report.quarantined += try quarantine.moveStore(present, reason: .conflict)
        } else if context.fileSystem.exists(present.main.path) {
            target = quarantine.location(for: source.url(in: context.container))
            context.logger.warning(
                "store in both places; the source goes to quarantine", metadata: ["store": "\(source)"])
        } else {
            report.quarantined += try quarantine.moveStaleFiles(
                of: StoreFileSet(main: target.url(in: context.container)))
        }
        let moved = try move(context.move(source, target), observer: observer)
        if target != destination {
            report.quarantined.append(.init(from: moved.from, to: moved.to, reason: .conflict))
        } else {
            report.moved.append(moved)
        }
        return report
    }

    /// Runs one move. Two mounts of one device (a bind mount, a container volume) share `st_dev`,
    /// yet a rename between them fails with `EXDEV` before anything moved: `auto` then copies.
    private func move(_ move: StoreMove, observer: MoveObserver) throws(BackstageError) -> RelocationReport.MovedStore {
        let made = missingFolders(of: move)
        do {
            return try moveTrying(move, observer: observer)
        } catch {
            removeFolders(made)
            throw error
        }
    }

    /// The move itself: its preflight, then the strategy it resolved (a copy after a rename that crossed a mount).
    private func moveTrying(
        _ move: StoreMove, observer: MoveObserver
    ) throws(BackstageError)
        -> RelocationReport.MovedStore
    {
        let (resolved, bytes) = try move.preflight(strategy)
        let first = Result { () throws(BackstageError) in
            try move.run(strategy: resolved, bytes: bytes, observer: observer)
        }
        guard case .failure(let error) = first, error.isCrossDevice, strategy == .auto, resolved == .rename else {
            return try first.get()
        }
        context.logger.notice("rename crossed a mount; copying instead", metadata: ["store": "\(subject)"])
        let (_, copyBytes) = try move.preflight(.copy)
        return try move.run(strategy: .copy, bytes: copyBytes, observer: observer)
    }

    package static func recover(_ record: UpgradeJournal, in context: StepContext) throws -> String {
        try context.move(record.source, record.destination).recover()
    }

    /// The folders the move's preflight makes to hold its destination (those missing now),
    /// deepest first.
    private func missingFolders(of move: StoreMove) -> [String] {
        var missing: [String] = []
        var folder = move.destinationSet.directory.path
        while !folder.isEmpty, folder != "/", !context.fileSystem.exists(folder) {
            missing.append(folder)
            folder = (folder as NSString).deletingLastPathComponent
        }
        return missing
    }

    /// Removes the folders made for a move that was refused or undone (its journal cleared), so
    /// that it leaves nothing behind: each if it is still empty, deepest first.
    private func removeFolders(_ folders: [String]) {
        let fileSystem = context.fileSystem
        guard let top = folders.last, !JournalFile.isWaiting(in: context.container, fileSystem: fileSystem) else {
            return
        }
        do {
            for folder in folders where fileSystem.exists(folder) { try fileSystem.removeEmptyFolder(folder) }
            try fileSystem.syncDirectory((top as NSString).deletingLastPathComponent)
        } catch {
            // An empty folder left behind holds no data: the move's error is the one to report.
            context.logger.debug("a folder made for the move stays", metadata: ["error": "\(error)"])
        }
    }

    package init(
        context: StepContext, source: ContainerLocation, destination: ContainerLocation, strategy: RelocationStrategy
    ) {
        self.context = context
        self.source = source
        self.destination = destination
        self.strategy = strategy
    }
}

extension RelocationReport {
    /// Adds what a step moved and set aside to this report.
    package mutating func add(_ step: RelocationReport) {
        moved += step.moved
        quarantined += step.quarantined
    }
}
