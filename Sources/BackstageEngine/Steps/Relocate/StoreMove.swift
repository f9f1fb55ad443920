import BackstageModel
import BackstageSystem
import Foundation
import GRDB
import Logging

/// Moves one store's file set from `source` to `destination`, keeping the relocation invariants:
/// exclusive lock first; checkpoint before any byte leaves; rename or copy + fsync + verify;
/// the source removed only after the destination is committed; the journal naming the phase.
struct StoreMove {
    let container: AppContainer
    let fileSystem: FileSystem
    let journal: JournalFile
    /// The run's one quarantine: everything set aside in a run lands in one timestamped folder.
    let quarantine: Quarantine
    let source: ContainerLocation
    let destination: ContainerLocation
    let busyTimeout: Double
    let logger: Logger

    var sourceSet: StoreFileSet { StoreFileSet(main: source.url(in: container)) }
    var destinationSet: StoreFileSet { StoreFileSet(main: destination.url(in: container)) }

    /// Runs the move. On failure or cancellation before the commit, the temporaries are removed
    /// and the source stays authoritative.
    func run(
        strategy: RelocationStrategy, bytes: Int64, observer: MoveObserver
    ) throws(BackstageError) -> RelocationReport.MovedStore {
        let started = Date()
        let record = UpgradeJournal(
            step: .relocate, phase: .journaled, source: source, destination: destination, strategy: strategy)
        observer.phase(.preflight)
        try journal.write(record)
        observer.phase(.journaled)
        var committed = false
        do {
            let moved = try moveLocked(
                strategy, bytes: bytes, record: record, observer: observer, committed: &committed)
            return try finish(moved, strategy: strategy, observer: observer, started: started)
        } catch {
            let failure = relocationFailure(error, bytes: bytes)
            // Before the commit the source was never touched beyond a checkpoint: drop what was written.
            if !committed { undo() }
            throw failure
        }
    }

    /// What the moved files came to, before the source's sidecars are cleared.
    private struct Moved {
        var files: Int
        /// The database's hard links before the move.
        var links: Int
    }

    /// Locks the source, then copies or renames it to the destination, past the commit.
    private func moveLocked(
        _ strategy: RelocationStrategy, bytes: Int64, record: UpgradeJournal, observer: MoveObserver,
        committed: inout Bool
    ) throws -> Moved {
        let src = sourceSet
        try checkCancelled(observer)
        // An empty file with no sidecar holds nothing to check point or roll back; opening it with
        // SQLite would turn it into a database. It moves as the bytes it is, and so does a store
        // without a SQLite header (encrypted), with its sidecars: SQLite cannot open it.
        let opaque = try isOpaque(src.main.path)
        let unlockable = try opaque || isEmptyWithoutSidecars(src)
        let lock = unlockable ? nil : try StoreLock(path: src.main.path, timeout: busyTimeout, during: .relocating)
        defer { lock?.close() }
        logger.debug("locked", metadata: ["store": "\(src.main.path)", "wal": "\(lock?.isWAL ?? false)"])
        // SQLite's lock cannot see an idle rollback-journal connection (nor anyone using an opaque
        // store): look for other holders.
        let holders = try opaque ? otherHolders(of: src) : fileSystem.otherProcessesHolding(src.main.path)
        if !holders.isEmpty {
            throw BackstageError(.storeHeldOpen(processes: holders), path: src.main.path, during: .relocating)
        }
        // What the files are under the lock: a copy is verified against it, not only against itself.
        let locked = try LockedFiles(src, opaque: opaque, fileSystem: fileSystem)
        let links = locked.main.linkCount
        observer.phase(.locked)
        try checkCancelled(observer)
        let files =
            strategy == .copy
            ? try copy(
                bytes: bytes, locked: locked, record: record, observer: observer, committed: &committed)
            : try rename(opaque: opaque, record: record, observer: observer, committed: &committed)
        lock?.close()
        return Moved(files: files, links: links)
    }

    /// Copies the store to temporaries, verifies them, commits by renaming the database in, then
    /// removes the source (still under the lock). Returns the number of files moved.
    private func copy(
        bytes total: Int64, locked: LockedFiles, record: UpgradeJournal, observer: MoveObserver,
        committed: inout Bool
    ) throws -> Int {
        let src = sourceSet, dst = destinationSet, opaque = locked.opaque
        var announcedCopying = false
        let report: (Int64) throws -> Void = { absolute in
            observer.progress(absolute, total)
            if !announcedCopying && absolute > 0 {
                announcedCopying = true
                observer.phase(.copying)
            }
            if observer.isCancelled() { throw BackstageError(.cancelled, path: src.main.path, during: .relocating) }
        }
        try removeTemporaries(dst)
        let main = try fileSystem.copyVerified(
            src.main.path, to: dst.temporaryMain.path, unchangedSince: locked.main, progress: report)
        var copied = main.bytes, treeIdentical = main.identical, files = 1
        if opaque {
            let sidecars = try copySidecars(src, to: dst, locked: locked.sidecars, after: copied, progress: report)
            copied += sidecars.bytes
            files += sidecars.files
            treeIdentical = treeIdentical && sidecars.identical
        }
        if try fileSystem.status(src.supportFolder.path) != nil {
            // Each file compared with its source as soon as it is written.
            let offset = copied
            let tree = try fileSystem.copyTree(
                src.supportFolder.path, to: dst.temporarySupportFolder.path, verify: true,
                progress: { try report(offset + $0) })
            files += tree.files
            treeIdentical = treeIdentical && tree.identical
        }
        try fileSystem.syncDirectory(dst.directory.path)
        observer.phase(.copied)
        guard treeIdentical,
            try fileSystem.treesEqual(src.supportFolder.path, dst.temporarySupportFolder.path, comparingContents: false)
        else { throw BackstageError(.verificationFailed, path: dst.temporaryMain.path, during: .relocating) }
        // Once more after every comparison: the source is still what was locked and copied.
        try locked.checkUnchanged(fileSystem)
        observer.progress(total, total)
        observer.phase(.verified)
        try journal.write(record.with(phase: .verified))
        try checkCancelled(observer)
        try fileSystem.rename(dst.temporaryMain.path, to: dst.main.path)
        try fileSystem.syncDirectory(dst.directory.path)
        try commit(record, observer: observer, committed: &committed)
        if opaque { try promoteTemporarySidecars(of: dst) }
        if try fileSystem.status(dst.temporarySupportFolder.path) != nil {
            try fileSystem.rename(dst.temporarySupportFolder.path, to: dst.supportFolder.path)
            try fileSystem.syncDirectory(dst.directory.path)
        }
        observer.phase(.supportMoved)
        // Still under the lock: nobody can write to the source between commit and removal.
        try fileSystem.removeFile(src.main.path)
        for sidecar in try opaque ? presentSidecars(of: src) : [] {
            try fileSystem.removeFile(src.sidecar(sidecar).path)
        }
        try fileSystem.removeTree(src.supportFolder.path)
        return files
    }

    /// Renames the database (the commit), then its sidecars when opaque and its support folder.
    /// Returns the number of files moved, the support folder counted as one.
    private func rename(
        opaque: Bool, record: UpgradeJournal, observer: MoveObserver, committed: inout Bool
    ) throws -> Int {
        let src = sourceSet, dst = destinationSet
        try fileSystem.rename(src.main.path, to: dst.main.path)
        try fileSystem.syncDirectory(dst.directory.path)
        try fileSystem.syncDirectory(src.directory.path)
        try commit(record, observer: observer, committed: &committed)
        var files = 1
        if opaque { files += try renameSidecars(src, to: dst) }
        if try fileSystem.status(src.supportFolder.path) != nil {
            files += 1
            try fileSystem.rename(src.supportFolder.path, to: dst.supportFolder.path)
            try fileSystem.syncDirectory(dst.directory.path)
        }
        observer.phase(.supportMoved)
        return files
    }

    /// The database is at the destination: from here on the destination is authoritative.
    private func commit(_ record: UpgradeJournal, observer: MoveObserver, committed: inout Bool) throws {
        committed = true
        try journal.write(record.with(phase: .committed))
        observer.phase(.committed)
    }

    /// Clears the source's checkpointed sidecars and the journal, and says what moved.
    private func finish(
        _ moved: Moved, strategy: RelocationStrategy, observer: MoveObserver, started: Date
    ) throws -> RelocationReport.MovedStore {
        let src = sourceSet, dst = destinationSet
        try quarantine.removeCheckpointedSidecars(of: src)
        try fileSystem.syncDirectory(src.directory.path)
        observer.phase(.sourceRemoved)
        try journal.clear()
        observer.phase(.done)
        var size = try fileSystem.status(dst.main.path)?.size ?? 0
        if strategy == .copy { size += (try? fileSystem.treeSize(dst.supportFolder.path)) ?? 0 }
        var report = RelocationReport.MovedStore(
            store: source.path, from: src.main.path, to: dst.main.path, strategy: strategy, files: moved.files,
            bytes: size, seconds: Date().timeIntervalSince(started))
        if moved.links > 1 {
            report.warnings.append(.hardLinked(path: src.main.path, links: moved.links))
            logger.warning("\(RelocationWarning.hardLinked(path: src.main.path, links: moved.links))")
        }
        return report
    }

    private func checkCancelled(_ observer: MoveObserver) throws(BackstageError) {
        if observer.isCancelled() { throw BackstageError(.cancelled, path: sourceSet.main.path, during: .relocating) }
    }

    /// The relocation error a failure of the move is, naming the store's file.
    private func relocationFailure(_ error: any Error, bytes: Int64) -> BackstageError {
        let src = sourceSet
        return switch error {
        case let error as FileChanged:
            BackstageError(.sourceChanged(reason: error.reason), path: error.path, during: .relocating)
        case let error as DatabaseError:
            StoreLock.map(error, path: src.main.path, timeout: busyTimeout, during: .relocating)
        case let error as FileSystemError where error.isOutOfSpace:
            BackstageError(
                .insufficientSpace(
                    needed: bytes,
                    available: (try? fileSystem.space(at: destinationSet.directory.path).available) ?? 0),
                path: error.path, during: .relocating)
        case let error as FileSystemError where error.code == EROFS:
            BackstageError(.readOnlyDestination, path: error.path, during: .relocating)
        default: BackstageError(error, path: src.main.path, during: .relocating)
        }
    }

    /// Undoes a move that failed before its commit: its temporaries go, then its journal. An undo
    /// that fails is logged with the file it could not remove, and the journal is kept: the next
    /// run rolls the move back from it (``recover()``), so nothing is left behind unaccounted for.
    private func undo() {
        let dst = destinationSet
        do {
            try removeTemporaries(dst)
        } catch {
            logger.error(
                "the failed move could not be undone; its journal is kept and the next run removes the rest",
                metadata: ["store": "\(dst.main.path)", "file": "\(error.path)", "error": "\(error)"])
            return
        }
        do {
            try journal.clear()
        } catch {
            logger.error(
                "the failed move's journal could not be cleared; the next run rolls the move back from it",
                metadata: ["store": "\(dst.main.path)", "file": "\(error.path)", "error": "\(error)"])
        }
    }

    /// The state of the source's files when the lock was taken: the main file, and an opaque
    /// store's sidecars (which travel with it).
    struct LockedFiles {
        let main: FileStatus
        let sidecars: [Sidecar: FileStatus]
        let opaque: Bool
        private let store: StoreFileSet

        init(_ store: StoreFileSet, opaque: Bool, fileSystem: FileSystem) throws {
            guard let main = try fileSystem.status(store.main.path) else {
                throw BackstageError(.storeNotFound, path: store.main.path, during: .relocating)
            }
            var sidecars: [Sidecar: FileStatus] = [:]
            for sidecar in Sidecar.allCases where opaque {
                sidecars[sidecar] = try fileSystem.status(store.sidecar(sidecar).path)
            }
            self.main = main
            self.sidecars = sidecars
            self.opaque = opaque
            self.store = store
        }

        /// Throws ``FileChanged`` unless every file is still the version it was under the lock.
        func checkUnchanged(_ fileSystem: FileSystem) throws {
            try fileSystem.checkUnchanged(store.main.path, since: main)
            for (sidecar, status) in sidecars.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                try fileSystem.checkUnchanged(store.sidecar(sidecar).path, since: status)
            }
        }
    }

    private func isEmptyWithoutSidecars(_ store: StoreFileSet) throws -> Bool {
        guard try fileSystem.status(store.main.path)?.size == 0 else { return false }
        return try Sidecar.allCases.allSatisfy { try fileSystem.status(store.sidecar($0).path) == nil }
    }

    func removeTemporaries(_ dst: StoreFileSet) throws(FileSystemError) {
        try fileSystem.removeTree(dst.temporaryMain.path)
        for sidecar in Sidecar.allCases { try fileSystem.removeTree(dst.temporarySidecar(sidecar).path) }
        try fileSystem.removeTree(dst.temporarySupportFolder.path)
    }
}
