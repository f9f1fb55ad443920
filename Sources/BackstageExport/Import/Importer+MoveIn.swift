import Backstage
import Foundation

/// One rename that brings a staged file, link or whole folder into Documents.
struct StagedMove {
    var from: String
    var to: String
    /// True when `to` exists and is replaced (``ConflictPolicy/replace``).
    var replaces: Bool
}

extension Importer {
    /// Where an older Backstage set replaced originals aside, under numbers: swept into quarantine.
    static let replacedFolder = ".replaced"

    /// Decides, before anything moves, where each staged entry goes: a folder Documents lacks moves
    /// whole; a folder it has is merged; a file it has follows the conflict policy. A name equal to
    /// an existing one but for Unicode normalization is that same document (what the user sees is
    /// the same name; archivers hand names over in NFC); one equal but for case is refused.
    func planMoveIn(
        staging: String, policy: ConflictPolicy, archivePath: String, report: inout ImportReport
    ) throws -> [StagedMove] {
        var moves: [StagedMove] = []
        try plan(
            staged: staging, documents: container.documents.path, relative: "", policy: policy,
            archivePath: archivePath, moves: &moves, report: &report)
        return moves
    }

    func plan(
        staged folder: String, documents: String, relative: String, policy: ConflictPolicy, archivePath: String,
        moves: inout [StagedMove], report: inout ImportReport
    ) throws {
        let existingNames = try fileSystem.contents(of: documents)
        var byKey: [String: String] = [:]
        for name in existingNames { byKey[EntryPaths.key(name)] = name }
        let stagedNames = try fileSystem.contents(of: folder)
        var taken = Set(existingNames.map { Array($0.utf8) })
        for name in stagedNames { taken.insert(Array(name.utf8)) }
        var level = PlanLevel(
            staged: folder, documents: documents, relative: relative, policy: policy, archivePath: archivePath,
            existing: existingNames, byKey: byKey, taken: taken)

        // A user's database and its companions (sidecars, support folder) are one unit: renamed,
        // skipped and replaced together.
        var handled = Set<String>()
        for unit in try companionUnits(in: level, stagedNames: stagedNames) {
            try plan(unit, in: &level, moves: &moves, report: &report)
            handled.formUnion(unit.members.map(\.staged))
        }
        for stagedName in stagedNames where !handled.contains(stagedName) {
            let staged = folder + "/" + stagedName
            let name = try level.documentsName(of: stagedName)
            let destination = documents + "/" + name
            let path = level.path(of: name)
            guard let stagedStatus = try fileSystem.status(staged) else { continue }
            guard let existing = try fileSystem.status(destination) else {
                moves.append(StagedMove(from: staged, to: destination, replaces: false))
                continue
            }
            if stagedStatus.kind == .directory && existing.kind == .symlink {
                // The archive's folder would be written through the link: refused, whatever the policy.
                throw ImportError(
                    archivePath: archivePath, entryPath: try firstEntry(under: staged, path: path),
                    reason: .behindLinkInDocuments(link: path))
            }
            if stagedStatus.kind == .directory && existing.kind == .directory {
                // Inside a user's support folder a file is found by its name (the row that refers to
                // it): keep-both cannot give it another one, so a file already there is kept.
                let inner = policy == .keepBoth && FileClassifier.isCoreDataSupportFolder(name) ? .skip : policy
                try plan(
                    staged: staged, documents: destination, relative: path, policy: inner, archivePath: archivePath,
                    moves: &moves, report: &report)
                continue
            }
            if policy == .keepBoth,
                let same = try copyWithSameContent(
                    of: staged, kind: stagedStatus.kind, named: name, in: documents, existing: existingNames)
            {
                report.identical.append(level.path(of: same))
                try notWritten(staged, report: &report)
                continue
            }
            switch policy {
            case .skip:
                report.skipped.append(path)
                try notWritten(staged, report: &report)
            case .replace:
                guard stagedStatus.kind != .directory && existing.kind != .directory else {
                    throw ImportError(archivePath: archivePath, entryPath: path, reason: .conflict(existing: path))
                }
                moves.append(StagedMove(from: staged, to: destination, replaces: true))
                report.replaced.append(path)
            case .keepBoth:
                let free = Self.freeName(for: name, isFolder: stagedStatus.kind == .directory, taken: level.taken)
                level.taken.insert(Array(free.utf8))
                moves.append(StagedMove(from: staged, to: documents + "/" + free, replaces: false))
                report.renamed.append(.init(from: path, to: level.path(of: free)))
            }
        }
    }

    /// The first entry of the archive inside the staged folder `staged` (at `path`): its first file
    /// or link, depth first in sorted order, or the folder itself when it holds none.
    private func firstEntry(under staged: String, path: String) throws -> String {
        for name in try fileSystem.contents(of: staged).sorted() {
            let inner = staged + "/" + name
            if try fileSystem.status(inner)?.kind == .directory {
                let found = try firstEntry(under: inner, path: path + "/" + name)
                if found != path + "/" + name { return found }
            } else {
                return path + "/" + name
            }
        }
        return path
    }

    /// Takes a staged entry left in staging (and everything in it) out of the report's counts.
    func notWritten(_ staged: String, report: inout ImportReport) throws {
        guard let status = try fileSystem.status(staged) else { return }
        switch status.kind {
        case .regular:
            report.written -= 1
            report.bytes -= status.size
        case .directory:
            for name in try fileSystem.contents(of: staged) { try notWritten(staged + "/" + name, report: &report) }
        case .symlink, .other:
            report.written -= 1
        }
    }

    /// The name of an entry of `documents` with the same content as `staged`: `name` itself, or one
    /// of the names keep-both gives a copy (`name 2.ext`, `name 3.ext`...). The same content is the
    /// same document: a file with the same bytes, a link with the same target, a folder holding
    /// already everything the staged one holds (an empty one: any folder). Importing an archive twice
    /// never makes a copy of what Documents already has.
    private func copyWithSameContent(
        of staged: String, kind: FileStatus.Kind, named name: String, in documents: String,
        existing: [String]
    ) throws -> String? {
        let present = Set(existing.map { Array($0.utf8) })
        var candidate = name
        var taken: Set<[UInt8]> = []
        while present.contains(Array(candidate.utf8)) {
            if try sameContent(staged, documents + "/" + candidate, kind: kind) { return candidate }
            taken.insert(Array(candidate.utf8))
            candidate = Self.freeName(for: name, isFolder: kind == .directory, taken: taken)
        }
        return nil
    }

    /// True when `path` in Documents has what `staged` (of `kind`) has: the same bytes, the same link
    /// target, or, for a folder, everything of the staged one, each with the same content.
    func sameContent(_ staged: String, _ path: String, kind: FileStatus.Kind) throws -> Bool {
        guard let status = try fileSystem.status(path), status.kind == kind else { return false }
        switch kind {
        case .regular:
            return try sameBytes(staged, path)
        case .symlink:
            let fileManager = FileManager.default
            return try fileManager.destinationOfSymbolicLink(atPath: staged)
                == fileManager.destinationOfSymbolicLink(atPath: path)
        case .directory:
            let names = Set(try fileSystem.contents(of: path).map { Array($0.utf8) })
            for name in try fileSystem.contents(of: staged) {
                guard names.contains(Array(name.utf8)), let inner = try fileSystem.status(staged + "/" + name),
                    try sameContent(staged + "/" + name, path + "/" + name, kind: inner.kind)
                else { return false }
            }
            return true
        case .other:
            return false
        }
    }

    /// True when the two regular files hold the same bytes.
    private func sameBytes(_ first: String, _ second: String) throws -> Bool {
        guard try fileSystem.status(first)?.size == fileSystem.status(second)?.size else { return false }
        guard let a = FileHandle(forReadingAtPath: first), let b = FileHandle(forReadingAtPath: second) else {
            return false
        }
        defer {
            try? a.close()
            try? b.close()
        }
        while true {
            let chunk = try a.read(upToCount: 1 << 20) ?? Data()
            guard chunk == (try b.read(upToCount: 1 << 20) ?? Data()) else { return false }
            if chunk.isEmpty { return true }
        }
    }

    /// `Report.pdf` → `Report 2.pdf`, `Report 3.pdf`...; a folder or a name without extension gets the number at the end.
    static func freeName(for name: String, isFolder: Bool, taken: Set<[UInt8]>) -> String {
        var base = name
        var suffix = ""
        if !isFolder, let dot = name.lastIndex(of: "."), dot != name.startIndex {
            base = String(name[..<dot])
            suffix = String(name[dot...])
        }
        var n = 2
        while true {
            let candidate = "\(base) \(n)\(suffix)"
            if !taken.contains(Array(candidate.utf8)) { return candidate }
            n += 1
        }
    }
}
