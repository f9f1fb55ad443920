import BackstageModel
import BackstageSystem
import Foundation

extension StoreMove {
    /// Repairs a move that a crash interrupted, using the journal and what is on disk.
    ///
    /// The database at the destination is the commit point: it only appears there by the
    /// commit rename. When it is there, the move is finished (support folder, source removal);
    /// when it is not, the temporaries are removed and the source stays authoritative.
    ///
    /// - returns: `completed` or `rolled back`.
    func recover() throws -> String {
        let src = sourceSet, dst = destinationSet
        let fs = fileSystem
        guard try fs.status(dst.main.path) != nil else {
            try removeTemporaries(dst)
            try fs.syncDirectory(dst.directory.path)
            try journal.clear()
            return "rolled back"
        }
        // Committed: the destination is authoritative.
        if try fs.status(dst.temporarySupportFolder.path) != nil && fs.status(dst.supportFolder.path) == nil {
            try fs.rename(dst.temporarySupportFolder.path, to: dst.supportFolder.path)
        }
        if try fs.status(src.supportFolder.path) != nil {
            if try fs.status(dst.supportFolder.path) == nil {
                // A rename move stopped between the database and its support folder.
                try fs.rename(src.supportFolder.path, to: dst.supportFolder.path)
            } else if try fs.tree(src.supportFolder.path, isPartOf: dst.supportFolder.path) {
                // A copy move whose removal of the source's folder stopped halfway: what is left
                // is all at the destination, byte for byte.
                try fs.removeTree(src.supportFolder.path)
            } else {
                _ = try quarantine.move(src.supportFolder, reason: .conflict)
            }
        }
        try fs.syncDirectory(dst.directory.path)
        if try isOpaque(dst.main.path) {
            // A store without a SQLite header: its sidecars hold its data and go where it went.
            try recoverOpaque(src, dst)
        } else if let status = try fs.status(src.main.path) {
            // A copy move stopped before removing its source. Remove it only if nothing wrote to it
            // since: compared with the destination under the source's lock, as a run holds it (another
            // process with it open is "store in use"), after the lock's checkpoint folded any -wal in.
            // A damaged one cannot be locked, nor vouched for: it is kept in quarantine.
            var lock: StoreLock?
            var damaged = false
            if status.size > 0 {
                do {
                    lock = try StoreLock.forRecovery(of: src, timeout: busyTimeout, fileSystem: fs)
                } catch let error as BackstageError {
                    switch error.cause {
                    case .notADatabase, .corruptStore: damaged = true
                    default: throw error
                    }
                }
            }
            defer { lock?.close() }
            if lock == nil {
                let holders = try fs.otherProcessesHolding(src.main.path)
                if !holders.isEmpty {
                    throw BackstageError(.storeHeldOpen(processes: holders), path: src.main.path, during: .relocating)
                }
            }
            let walEmpty = (try fs.status(src.sidecar(.wal).path)?.size ?? 0) == 0
            if !damaged, walEmpty, try fs.contentsEqual(src.main.path, dst.main.path) {
                try fs.removeFile(src.main.path)
            } else {
                _ = try quarantine.move(src.main, reason: .conflict)
            }
            lock?.close()
        }
        try quarantine.removeCheckpointedSidecars(of: src)
        try fs.syncDirectory(src.directory.path)
        try journal.clear()
        return "completed"
    }
}
