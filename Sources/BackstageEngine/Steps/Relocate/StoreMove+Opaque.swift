import BackstageModel
import BackstageSystem
import Foundation

/// A declared store whose main file has bytes but no SQLite header (an encrypted SQLCipher store)
/// moves whole, as the bytes it is: SQLite cannot open it, so nothing is checkpointed and its
/// `-wal`, `-shm` and `-journal` travel with it. The commit point stays the main file arriving at
/// the destination; its sidecars follow it, and a crash between the two is finished by recovery.
extension StoreMove {
    /// True when `path` is a regular file with bytes that do not start with the SQLite header, nor
    /// with a part of it (a database cut inside its first 16 bytes is damaged, not opaque). Callers
    /// only move declared stores: an undeclared file without a header never gets here.
    func isOpaque(_ path: String) throws(FileSystemError) -> Bool {
        guard let status = try fileSystem.status(path), status.kind == .regular, status.size > 0 else { return false }
        let prefix = try fileSystem.readPrefix(path, count: 16)
        return !SQLiteHeader.hasMagic(prefix) && !Self.isPartOfMagic(prefix)
    }

    /// True for the first bytes of the SQLite header and nothing else (a file shorter than it).
    static func isPartOfMagic(_ bytes: [UInt8]) -> Bool {
        bytes.count < 16 && Array(SQLiteHeader.magic.prefix(bytes.count)) == bytes
    }

    /// The sidecars of `store` present on disk.
    func presentSidecars(of store: StoreFileSet) throws(FileSystemError) -> [Sidecar] {
        var present: [Sidecar] = []
        for sidecar in Sidecar.allCases where try fileSystem.status(store.sidecar(sidecar).path) != nil {
            present.append(sidecar)
        }
        return present
    }

    /// The processes other than this one holding any file of an opaque store open. Without
    /// SQLite's lock this is the only way to see that the app still has it open.
    func otherHolders(of store: StoreFileSet) throws(FileSystemError) -> [Int32] {
        var holders: [Int32] = []
        for path in [store.main] + Sidecar.allCases.map(store.sidecar) {
            for pid in try fileSystem.otherProcessesHolding(path.path) where !holders.contains(pid) {
                holders.append(pid)
            }
        }
        return holders
    }

    /// Copies each sidecar of an opaque store to its temporary name at the destination, each
    /// verified as it is written. Returns the bytes copied and whether every copy is identical.
    /// Each is verified against the state it had under the lock (`locked`): one that appeared since
    /// is a change too.
    func copySidecars(
        _ src: StoreFileSet, to dst: StoreFileSet, locked: [Sidecar: FileStatus], after offset: Int64,
        progress: (Int64) throws -> Void
    ) throws -> (bytes: Int64, files: Int, identical: Bool) {
        var bytes: Int64 = 0, files = 0, identical = true
        for sidecar in try presentSidecars(of: src) {
            let start = offset + bytes
            let path = src.sidecar(sidecar).path
            guard let before = locked[sidecar] else {
                throw FileChanged(path: path, before: nil, after: try fileSystem.status(path))
            }
            let copy = try fileSystem.copyVerified(
                path, to: dst.temporarySidecar(sidecar).path, unchangedSince: before,
                progress: { try progress(start + $0) })
            bytes += copy.bytes
            files += 1
            identical = identical && copy.identical
        }
        return (bytes, files, identical)
    }

    /// After the commit of a copy: the verified temporary sidecars take their names.
    func promoteTemporarySidecars(of dst: StoreFileSet) throws(FileSystemError) {
        for sidecar in Sidecar.allCases where try fileSystem.status(dst.temporarySidecar(sidecar).path) != nil {
            if try fileSystem.status(dst.sidecar(sidecar).path) == nil {
                try fileSystem.rename(dst.temporarySidecar(sidecar).path, to: dst.sidecar(sidecar).path)
            } else {
                try fileSystem.removeTree(dst.temporarySidecar(sidecar).path)
            }
        }
        try fileSystem.syncDirectory(dst.directory.path)
    }

    /// After the commit of a rename: the sidecars follow the main file. Returns how many moved.
    @discardableResult
    func renameSidecars(_ src: StoreFileSet, to dst: StoreFileSet) throws -> Int {
        let present = try presentSidecars(of: src)
        for sidecar in present {
            let from = src.sidecar(sidecar).path, to = dst.sidecar(sidecar).path
            if try fileSystem.status(to) == nil {
                try fileSystem.rename(from, to: to)
            } else if try fileSystem.contentsEqual(from, to) {
                // Only recovery meets these: a copy's source removed up to its sidecars,
                try fileSystem.removeFile(from)
            } else {
                // or a sidecar someone wrote at the destination since.
                _ = try quarantine.move(src.sidecar(sidecar), reason: .conflict)
            }
        }
        try fileSystem.syncDirectory(dst.directory.path)
        try fileSystem.syncDirectory(src.directory.path)
        return present.count
    }

    /// Finishes a committed move of an opaque store that a crash interrupted: a rename's sidecars
    /// follow the main file; a copy's temporary sidecars take their names, and its source is
    /// removed only when every file of it matches the destination (else it goes to quarantine).
    func recoverOpaque(_ src: StoreFileSet, _ dst: StoreFileSet) throws {
        try promoteTemporarySidecars(of: dst)
        guard try fileSystem.status(src.main.path) != nil else {
            try renameSidecars(src, to: dst)
            return
        }
        // Compared and removed only while no other process has any of its files open, as a run.
        let holders = try otherHolders(of: src)
        if !holders.isEmpty {
            throw BackstageError(.storeHeldOpen(processes: holders), path: src.main.path, during: .relocating)
        }
        var same = try fileSystem.contentsEqual(src.main.path, dst.main.path)
        for sidecar in Sidecar.allCases where same {
            let from = try fileSystem.status(src.sidecar(sidecar).path)
            let to = try fileSystem.status(dst.sidecar(sidecar).path)
            if from == nil && to == nil { continue }
            guard from != nil, to != nil else { same = false; continue }
            same = try fileSystem.contentsEqual(src.sidecar(sidecar).path, dst.sidecar(sidecar).path)
        }
        let present = try presentSidecars(of: src)
        if same {
            // The main file first: a crash after it leaves sidecars the next recovery removes above.
            try fileSystem.removeFile(src.main.path)
            for sidecar in present { try fileSystem.removeFile(src.sidecar(sidecar).path) }
        } else {
            _ = try quarantine.move(src.main, reason: .conflict)
            for sidecar in present { _ = try quarantine.move(src.sidecar(sidecar), reason: .conflict) }
        }
    }
}

extension StoreFileSet {
    /// The temporary name a sidecar of an opaque store is copied to before the commit.
    func temporarySidecar(_ sidecar: Sidecar) -> URL {
        directory.appending(path: TemporaryName.beside(fileName + sidecar.rawValue))
    }
}
