import BackstageModel
import BackstageSystem
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
        self.stamp = Self.stamp(date)
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC, worked out from the seconds since 1970 (a `DateFormatter`
    /// loads ICU's calendar data, a thousand allocations for every run of every step).
    package static func stamp(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let second = ((seconds % 86_400) + 86_400) % 86_400
        let days = (seconds - second) / 86_400
        // Howard Hinnant's civil_from_days: the proleptic Gregorian date of a day count.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return yearText + two(month) + two(day) + "T" + two(second / 3600) + two(second % 3600 / 60)
            + two(second % 60) + "Z"
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

    /// Quarantines a whole store (database, sidecars, support folder), the database first: a crash
    /// part way leaves its other files where a store is about to be created, and the next run
    /// quarantines them as stale (``moveStaleFiles(of:)``).
    func moveStore(_ store: StoreFileSet, reason: QuarantineReason) throws -> [RelocationReport.QuarantinedFile] {
        try store.allPaths.filter { fileSystem.exists($0.path) }.map { try move($0, reason: reason) }
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
