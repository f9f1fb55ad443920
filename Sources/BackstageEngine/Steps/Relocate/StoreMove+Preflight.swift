import BackstageModel
import BackstageSystem
import Foundation

extension StoreMove {
    /// Checks everything that can be checked without changing a byte; returns the strategy to use
    /// and the bytes a copy would write. The checks run in this order, and the first to refuse throws.
    func preflight(
        _ requested: RelocationStrategy
    ) throws(BackstageError) -> (strategy: RelocationStrategy, bytes: Int64) {
        do {
            let main = try refuseMissingOrLinkedStore()
            // A store without a SQLite header is copied whole, every sidecar with it.
            let opaque = try isOpaque(sourceSet.main.path)
            let sidecarBytes = try refuseLinkedSidecars(counting: opaque)
            let hasSupportFolder = try refuseLinkedSupportFolder()
            try refuseReadOnlySource()
            if main.size > 0 && !opaque { try refuseDamagedHeader(size: main.size) }
            try refuseExistingDestination()
            var bytes = main.size + sidecarBytes
            try createDestinationFolder(needing: bytes)
            let available = try refuseReadOnlyDestination()
            let strategy = try strategy(for: requested)
            // Only a copy needs the support folder's size; a rename moves it whole, in time
            // independent of the thousands of files it may hold.
            if strategy == .copy {
                if hasSupportFolder { bytes += try fileSystem.treeSize(sourceSet.supportFolder.path) }
                try refuseInsufficientSpace(needing: bytes, available: available)
            }
            return (strategy, bytes)
        } catch {
            throw BackstageError(error, path: sourceSet.main.path, during: .relocating)
        }
    }

    /// Refuses a store that is not there, is a symbolic link, or is not a regular file.
    private func refuseMissingOrLinkedStore() throws -> FileStatus {
        let path = sourceSet.main.path
        guard let main = try fileSystem.status(path) else {
            throw BackstageError(.storeNotFound, path: path, during: .relocating)
        }
        if main.kind == .symlink { throw BackstageError(.symlinkedStore, path: path, during: .relocating) }
        guard main.kind == .regular else { throw BackstageError(.notADatabase, path: path, during: .relocating) }
        return main
    }

    /// Refuses a sidecar that is a symbolic link; returns the bytes of the sidecars a move carries
    /// (the WAL, or all of them for an opaque store).
    private func refuseLinkedSidecars(counting opaque: Bool) throws -> Int64 {
        var bytes: Int64 = 0
        for sidecar in Sidecar.allCases {
            let path = sourceSet.sidecar(sidecar).path
            guard let status = try fileSystem.status(path) else { continue }
            if status.kind == .symlink { throw BackstageError(.symlinkedStore, path: path, during: .relocating) }
            if sidecar == .wal || opaque { bytes += status.size }
        }
        return bytes
    }

    /// Refuses a Core Data support folder that is a symbolic link; true when there is one.
    private func refuseLinkedSupportFolder() throws -> Bool {
        let path = sourceSet.supportFolder.path
        let support = try fileSystem.status(path)
        if support?.kind == .symlink { throw BackstageError(.symlinkedStore, path: path, during: .relocating) }
        return support != nil
    }

    /// Refuses a source folder on a read-only file system. The source is removed after the move (and
    /// a hot journal rolled back first): a read-only folder fails here, before anything is touched,
    /// not halfway with the store in both places.
    private func refuseReadOnlySource() throws {
        let folder = sourceSet.directory.path
        if try fileSystem.space(at: folder).readOnly {
            throw BackstageError(.readOnlySource, path: folder, during: .relocating)
        }
    }

    /// Refuses a main file of `size` bytes that does not start with SQLite's header, or that is
    /// shorter than its header says.
    private func refuseDamagedHeader(size: Int64) throws {
        let src = sourceSet
        let prefix = try fileSystem.readPrefix(src.main.path, count: 100)
        guard SQLiteHeader.hasMagic(prefix) || Self.isPartOfMagic(prefix) else {
            throw BackstageError(.notADatabase, path: src.main.path, during: .relocating)
        }
        guard let header = SQLiteHeader(prefix) else {
            throw BackstageError(
                .corruptStore(reason: "truncated: \(size) bytes, shorter than the 100-byte header"),
                path: src.main.path, during: .relocating)
        }
        // With a non-empty -wal or -journal the main file may be mid-checkpoint or mid-rollback
        // (a writer killed while copying pages back): SQLite repairs it from the sidecar, under
        // the lock, before a byte moves. Only a lone main file shorter than its header is truncated.
        let sidecarHoldsData = try [Sidecar.wal, .journal].contains {
            try (fileSystem.status(src.sidecar($0).path)?.size ?? 0) > 0
        }
        if !sidecarHoldsData, let expected = header.expectedFileSize, expected > size {
            throw BackstageError(
                .corruptStore(reason: "truncated: the header promises \(expected) bytes, the file has \(size)"),
                path: src.main.path, during: .relocating)
        }
    }

    /// Refuses a destination where a store already is.
    private func refuseExistingDestination() throws {
        let path = destinationSet.main.path
        if try fileSystem.status(path) != nil {
            throw BackstageError(.destinationExists, path: path, during: .relocating)
        }
    }

    /// Creates the destination's folder, refusing one that cannot be made because its file system is
    /// read-only or full. A folder made to receive the store is no wider than the one it comes from:
    /// an owner-only store stays owner-only (its owner always keeps rwx, to finish the move).
    private func createDestinationFolder(needing bytes: Int64) throws {
        let folder = destinationSet.directory.path
        do {
            let mode = try fileSystem.folderModeNoWider(than: sourceSet.directory.path)
            try fileSystem.createDirectories(folder, mode: mode)
        } catch {
            if error.isReadOnly { throw BackstageError(.readOnlyDestination, path: folder, during: .relocating) }
            if error.isOutOfSpace {
                throw BackstageError(.insufficientSpace(needed: bytes, available: 0), path: folder, during: .relocating)
            }
            throw error
        }
    }

    /// Refuses a destination folder on a read-only file system; returns the bytes available there.
    private func refuseReadOnlyDestination() throws -> Int64 {
        let folder = destinationSet.directory.path
        let space = try fileSystem.space(at: folder)
        if space.readOnly { throw BackstageError(.readOnlyDestination, path: folder, during: .relocating) }
        return space.available
    }

    /// The strategy `requested` comes to: `auto` renames on one file system and copies across two;
    /// refuses a `rename` across two.
    private func strategy(for requested: RelocationStrategy) throws -> RelocationStrategy {
        // The folders themselves, through any link (Documents may be a link to another disk).
        let from = sourceSet.directory.path, to = destinationSet.directory.path
        let sourceDevice = try fileSystem.status(fileSystem.resolvedPath(from) ?? from)?.device
        let sameDevice = sourceDevice == (try fileSystem.status(fileSystem.resolvedPath(to) ?? to)?.device)
        switch requested {
        case .auto: return sameDevice ? .rename : .copy
        case .rename:
            guard sameDevice else {
                throw BackstageError(
                    .crossDevice(destination: destinationSet.main.path), path: sourceSet.main.path, during: .relocating)
            }
            return .rename
        case .copy: return .copy
        }
    }

    /// Refuses a copy of `bytes` to a destination with fewer `available`.
    private func refuseInsufficientSpace(needing bytes: Int64, available: Int64) throws {
        guard available < bytes else { return }
        throw BackstageError(
            .insufficientSpace(needed: bytes, available: available), path: destinationSet.directory.path,
            during: .relocating)
    }
}
