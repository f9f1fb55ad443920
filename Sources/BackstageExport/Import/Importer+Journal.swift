import Backstage
import Foundation

/// The journaled move-in: how staged entries reach Documents so that a kill at any point is
/// finished or undone by the next import (``ImportJournal``).
extension Importer {
    /// Renames every staged entry into place under the import journal.
    ///
    /// First each file about to be replaced is linked, under its own path, into the staging folder's
    /// set-aside folder; then one `syncfs` makes every staged byte and every link durable, and the
    /// journal is written (phase `staged`) before the first rename. After the last rename the folders
    /// are fsynced and the journal says `moved-in`; only then do the staging folder (and the replaced
    /// originals in it) and the journal go. A rename that fails undoes the move-in (phase `undoing`):
    /// what was moved in goes back out, every original back under its own name. If the undo fails
    /// too, the journal stays, and the next import (or ``recoverInterruptedImport()``) finishes it.
    func moveIn(
        _ moves: [StagedMove], staging: String, archivePath: String, quarantine: Quarantine,
        report: inout ImportReport
    ) throws {
        let documents = container.documents.path
        let file = ImportJournalFile(container: container, fileSystem: fileSystem)
        var journal = ImportJournal(
            phase: .staged, archive: archivePath, staging: staging, entries: [], startedAt: Date())
        for move in moves {
            guard let path = FileSystem.relativePath(of: move.to, inside: documents),
                let staged = FileSystem.relativePath(of: move.from, inside: staging),
                let status = try fileSystem.status(move.from)
            else {
                throw FileSystemError(operation: .stat, path: move.from, code: ENOENT)
            }
            var entry = ImportJournal.Entry(path: path, staged: staged, inode: status.inode)
            if move.replaces {
                let aside = journal.setAside(entry)
                try fileSystem.createDirectories(
                    (aside as NSString).deletingLastPathComponent, mode: 0o700, durable: false)
                try fileSystem.createHardLink(aside, to: move.to)
                entry.original = try fileSystem.status(aside)?.inode
                report.setAside.append(path)
            }
            journal.entries.append(entry)
        }
        try fileSystem.syncFileSystem(containing: staging)
        try file.write(journal)
        boundaryHook?(.journaled)
        do {
            for (index, entry) in journal.entries.enumerated() {
                try moveIn(entry, of: journal)
                boundaryHook?(.moved(index + 1))
            }
            try syncFolders(of: journal)
            journal.phase = .movedIn
            try file.write(journal)
        } catch {
            do {
                journal.phase = .undoing
                try file.write(journal)
                var undo = ImportRecovery(archive: archivePath, outcome: .undone)
                try undoMoveIn(journal, into: &undo, quarantine: quarantine)
                try finish(journal, file)
                logger.notice(
                    "the move-in of \(archivePath) failed and was undone: \(undo.removed.count) moved back out, \(undo.putBack.count) originals put back"
                )
            } catch let undoError {
                logger.error(
                    "the move-in of \(archivePath) failed and could not be undone (\(undoError)); \(file.path) records it, and the next import finishes undoing it"
                )
            }
            throw error
        }
        boundaryHook?(.movedIn)
        try finish(journal, file)
    }

    /// Finishes or undoes an import that was killed (or whose undo failed) while it moved its files
    /// into Documents, and sweeps staging folders an import killed earlier left; nil when none waited.
    ///
    /// The next import does this first; an app that imports may call it at launch. It takes the
    /// container's run lock, so it never runs beside an import, relocation or upgrade.
    ///
    /// - returns: What was completed, put back or quarantined (``ImportRecovery``).
    /// - throws: ``ImportJournalError`` for a journal it cannot read (nothing is changed),
    ///   `FileSystemError` when a file cannot be moved (the journal stays, to be finished later).
    public func recoverInterruptedImport() throws -> ImportRecovery? {
        // Nothing waits (the common case): the container is left untouched, not even locked.
        guard try ImportJournalFile(container: container, fileSystem: fileSystem).exists || hasStagingFolder() else {
            return nil
        }
        let runLock = try RunLock(container: container, fileSystem: fileSystem)
        defer { runLock.release() }
        return try recoverLocked(Quarantine(container: container, fileSystem: fileSystem))
    }

    /// True when the temporary folder or Documents holds a staging folder of an import.
    private func hasStagingFolder() throws -> Bool {
        for parent in [container.temporary.path, container.documents.path]
        where try fileSystem.status(parent)?.kind == .directory {
            if try fileSystem.contents(of: parent).contains(where: { $0.hasPrefix(Self.stagingPrefix) }) { return true }
        }
        return false
    }

    /// ``recoverInterruptedImport()`` under a run lock already held.
    func recoverLocked(_ quarantine: Quarantine) throws -> ImportRecovery? {
        let file = ImportJournalFile(container: container, fileSystem: fileSystem)
        var recovery = try file.read().map { try recover($0, file: file, quarantine: quarantine) }
        let swept = try removeStaleStaging(quarantine)
        if !swept.isEmpty {
            var found = recovery ?? ImportRecovery(archive: nil, outcome: .undone)
            found.quarantined += swept
            recovery = found
        }
        return recovery
    }

    private func recover(
        _ found: ImportJournal, file: ImportJournalFile, quarantine: Quarantine
    ) throws
        -> ImportRecovery
    {
        var journal = found
        let staging = journal.staging
        let name = (staging as NSString).lastPathComponent
        let parent = (staging as NSString).deletingLastPathComponent
        guard name.hasPrefix(Self.stagingPrefix), [container.temporary.path, container.documents.path].contains(parent)
        else {
            throw ImportJournalError(journalPath: file.path, reason: .foreignStaging(staging))
        }
        var recovery = ImportRecovery(archive: journal.archive, outcome: .completed)
        // A move-in not yet finished, whose staging folder is gone (a kill after the folder was
        // removed leaves a finished move-in or undo, which the phase says).
        guard try journal.phase != .staged || fileSystem.status(staging)?.kind == .directory else {
            // Nothing to complete with and nothing to put back: Documents stays as found.
            let documents = container.documents.path
            recovery.outcome = .abandoned
            recovery.movedIn = try journal.entries.filter {
                try fileSystem.status(documents + "/" + $0.path)?.inode == $0.inode
            }.map(\.path)
            try file.clear()
            logger.warning(
                "an import of \(journal.archive) interrupted while moving in lost its staging folder \(staging): Documents left as found"
            )
            return recovery
        }
        if journal.phase == .staged, try canComplete(journal) {
            for entry in journal.entries where try fileSystem.status(journal.staged(entry)) != nil {
                try moveIn(entry, of: journal)
            }
            try syncFolders(of: journal)
            journal.phase = .movedIn
            try file.write(journal)
        }
        if journal.phase == .movedIn {
            recovery.movedIn = journal.entries.map(\.path)
            recovery.replaced = journal.entries.filter { $0.original != nil }.map(\.path)
        } else {
            if journal.phase != .undoing {
                journal.phase = .undoing
                try file.write(journal)
            }
            recovery.outcome = .undone
            try undoMoveIn(journal, into: &recovery, quarantine: quarantine)
        }
        try finish(journal, file)
        logger.notice(
            "an import of \(journal.archive) interrupted while moving in was \(recovery.outcome.rawValue): \(recovery.putBack.count) originals put back, \(recovery.quarantined.count) quarantined"
        )
        return recovery
    }

    /// True when every entry not yet moved in can still go where the import decided, overwriting
    /// nothing written since: its place is free (or holds the very original set aside), its folder is
    /// there, and a replaced original is still set aside.
    private func canComplete(_ journal: ImportJournal) throws -> Bool {
        guard try fileSystem.status(journal.staging)?.kind == .directory else { return false }
        let documents = container.documents.path
        for entry in journal.entries where try fileSystem.status(journal.staged(entry)) != nil {
            let destination = documents + "/" + entry.path
            guard try fileSystem.status((destination as NSString).deletingLastPathComponent)?.kind == .directory else {
                return false
            }
            let present = try fileSystem.status(destination)
            guard let original = entry.original else {
                if present != nil { return false }
                continue
            }
            guard try fileSystem.status(journal.setAside(entry))?.inode == original else { return false }
            if let present, present.inode != original { return false }
        }
        return true
    }

    /// Renames one staged entry into Documents; a file it replaces must still be the original set aside.
    private func moveIn(_ entry: ImportJournal.Entry, of journal: ImportJournal) throws {
        let destination = container.documents.path + "/" + entry.path
        guard let original = entry.original else {
            return try fileSystem.rename(journal.staged(entry), to: destination)
        }
        let present = try fileSystem.status(destination)
        if let present, present.inode != original {
            throw ImportError(archivePath: journal.archive, entryPath: entry.path, reason: .changedWhileImported)
        }
        try fileSystem.rename(journal.staged(entry), to: destination, replacing: present != nil)
    }

    /// Puts Documents back as it was, last entry first: an entry moved in (its inode in its place)
    /// goes back into the staging folder, and the original it replaced comes back under its own name.
    /// An entry changed since is left where it is; an original whose place is taken is quarantined.
    /// A replaced file whose original is no longer set aside keeps the archive's file: never neither.
    private func undoMoveIn(
        _ journal: ImportJournal, into recovery: inout ImportRecovery, quarantine: Quarantine
    ) throws {
        let documents = container.documents.path
        for entry in journal.entries.reversed() {
            let destination = documents + "/" + entry.path
            let staged = journal.staged(entry)
            let aside = journal.setAside(entry)
            let asideStatus = entry.original == nil ? nil : try fileSystem.status(aside)
            if entry.original == nil || asideStatus != nil, try fileSystem.status(staged) == nil,
                try fileSystem.status(destination)?.inode == entry.inode
            {
                try fileSystem.createDirectories((staged as NSString).deletingLastPathComponent, durable: false)
                try fileSystem.rename(destination, to: staged)
                recovery.removed.append(entry.path)
            }
            guard let asideStatus else { continue }
            let present = try fileSystem.status(destination)
            if present == nil {
                try fileSystem.rename(aside, to: destination)
                recovery.putBack.append(entry.path)
            } else if present?.inode == asideStatus.inode {
                // It never left: the set-aside name is a second link of the file in its place.
                try fileSystem.removeFile(aside)
            } else {
                recovery.quarantined.append(try quarantine.move(URL(filePath: aside), reason: .interruptedImport).to)
            }
        }
        try syncFolders(of: journal)
        recovery.removed.reverse()
        recovery.putBack.reverse()
    }

    /// Makes the renames into Documents durable: every folder an entry went into, and Documents.
    private func syncFolders(of journal: ImportJournal) throws {
        let documents = container.documents.path
        var folders = Set(journal.entries.map { ((documents + "/" + $0.path) as NSString).deletingLastPathComponent })
        folders.insert(documents)
        for folder in folders.sorted() where try fileSystem.status(folder)?.kind == .directory {
            try fileSystem.syncDirectory(folder)
        }
    }

    /// The end of a move-in, completed or undone: the staging folder goes (with the replaced
    /// originals of a completed one), then the journal.
    private func finish(_ journal: ImportJournal, _ file: ImportJournalFile) throws {
        try fileSystem.removeTree(journal.staging)
        boundaryHook?(.stagingRemoved)
        try file.clear()
    }

    /// Staging folders no journal names, left by an import killed before it moved anything in: their
    /// copies go. A file set aside in one is a second link of the original still in Documents, and
    /// goes with it; one that is not (set aside by an older Backstage, under a number) is
    /// quarantined, never deleted. Returns where each quarantined file is now.
    func removeStaleStaging(_ quarantine: Quarantine) throws -> [String] {
        var quarantined: [String] = []
        for parent in [container.temporary.path, container.documents.path] {
            guard (try fileSystem.status(parent))?.kind == .directory else { continue }
            for name in try fileSystem.contents(of: parent) where name.hasPrefix(Self.stagingPrefix) {
                let stale = parent + "/" + name
                let numbered = stale + "/" + Self.replacedFolder
                if try fileSystem.status(numbered) != nil, try !fileSystem.contents(of: numbered).isEmpty {
                    quarantined.append(try quarantine.move(URL(filePath: numbered), reason: .interruptedImport).to)
                }
                let aside = stale + "/" + ImportJournal.setAsideFolder
                if try fileSystem.status(aside)?.kind == .directory {
                    quarantined += try sweepSetAside(aside, relative: "", quarantine: quarantine)
                }
                try fileSystem.removeTree(stale)
            }
        }
        return quarantined
    }

    private func sweepSetAside(_ folder: String, relative: String, quarantine: Quarantine) throws -> [String] {
        var quarantined: [String] = []
        for name in try fileSystem.contents(of: folder) {
            let path = folder + "/" + name
            let inDocuments = relative.isEmpty ? name : relative + "/" + name
            guard let status = try fileSystem.status(path) else { continue }
            if status.kind == .directory {
                quarantined += try sweepSetAside(path, relative: inDocuments, quarantine: quarantine)
            } else if try fileSystem.status(container.documents.path + "/" + inDocuments)?.inode != status.inode {
                quarantined.append(try quarantine.move(URL(filePath: path), reason: .interruptedImport).to)
            }
        }
        return quarantined
    }
}
