import Foundation

/// Takes files out of Documents without deleting them: orphan sidecars, conflicting stores and
/// unknown internal files go to `applicationSupport/.backstage/quarantine/<timestamp>/<root>/<path>`.
package struct Quarantine {
    let container: AppContainer
    let fileSystem: FileSystem
    let stamp: String

    package init(container: AppContainer, fileSystem: FileSystem, date: Date = Date()) {
        self.container = container
        self.fileSystem = fileSystem
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        self.stamp = formatter.string(from: date)
    }

    /// The quarantine location for `url`, as a path relative to Application Support.
    func location(for url: URL) -> ContainerLocation {
        let path = url.standardizedFileURL.path
        var relative = url.lastPathComponent
        var rootName = "other"
        for root in container.roots {
            if let inside = FileSystem.relativePath(of: path, inside: container[root].path), !inside.isEmpty {
                relative = inside
                rootName = root.rawValue
                break
            }
        }
        let base = ".backstage/quarantine/\(stamp)/\(rootName)/\(relative)"
        var candidate = base
        var n = 1
        while fileSystem.exists(ContainerLocation(.applicationSupport, candidate).url(in: container).path) {
            n += 1
            candidate = "\(base).\(n)"
        }
        return ContainerLocation(.applicationSupport, candidate)
    }

    /// Moves a file or folder into quarantine: a rename on one file system, otherwise a copy to
    /// a temporary name, fsync, rename, and only then removal of the original.
    package func move(_ url: URL, reason: QuarantineReason) throws -> RelocationReport.QuarantinedFile {
        let target = location(for: url).url(in: container)
        let parent = target.deletingLastPathComponent().path
        let mode = try fileSystem.folderModeNoWider(than: url.deletingLastPathComponent().path)
        try fileSystem.createDirectories(parent, mode: mode)
        do {
            try fileSystem.rename(url.path, to: target.path)
        } catch {
            guard error.isCrossDevice else { throw error }
            let temporary = parent + "/" + TemporaryName.beside(target.lastPathComponent)
            try fileSystem.removeTree(temporary)
            _ = try fileSystem.copyTree(url.path, to: temporary)
            try fileSystem.rename(temporary, to: target.path)
            try fileSystem.syncDirectory(parent)
            try fileSystem.removeTree(url.path)
        }
        try fileSystem.syncDirectory(parent)
        try fileSystem.syncDirectory(url.deletingLastPathComponent().path)
        return .init(from: url.path, to: target.path, reason: reason)
    }

    /// Quarantines the sidecars and support folder found where `store` is about to be created,
    /// without its database: SQLite would splice a stale `-wal` into the new store.
    func moveStaleFiles(of store: StoreFileSet) throws -> [RelocationReport.QuarantinedFile] {
        try store.allPaths.dropFirst().filter { fileSystem.exists($0.path) }.map {
            try move($0, reason: .staleDestination)
        }
    }

    /// After a store's lock is released: its `-wal` is empty (checkpointed with TRUNCATE) and
    /// `-shm` is a derived index, so both go; a non-empty leftover is quarantined, never deleted.
    func removeCheckpointedSidecars(of store: StoreFileSet) throws {
        for sidecar in Sidecar.allCases {
            let path = store.sidecar(sidecar).path
            guard let status = try fileSystem.status(path) else { continue }
            if sidecar == .shm || status.size == 0 {
                try fileSystem.removeFile(path)
            } else {
                _ = try move(store.sidecar(sidecar), reason: .leftoverSidecar)
            }
        }
    }

    /// Removes copies that a crash left half-made inside the quarantine folder; their originals
    /// are still in place, because an original is removed only after its copy is renamed in.
    func removeTemporaries() throws {
        try sweep(container.quarantineDirectory.path)
    }

    private func sweep(_ path: String) throws {
        guard let st = try fileSystem.status(path), st.kind == .directory else { return }
        for name in try fileSystem.contents(of: path) {
            let child = path + "/" + name
            if TemporaryName.isTemporary(name) {
                try fileSystem.removeTree(child)
            } else {
                try sweep(child)
            }
        }
    }
}
