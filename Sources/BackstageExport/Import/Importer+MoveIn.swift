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

    private func plan(
        staged folder: String, documents: String, relative: String, policy: ConflictPolicy, archivePath: String,
        moves: inout [StagedMove], report: inout ImportReport
    ) throws {
        let existingNames = try fileSystem.contents(of: documents)
        var byKey: [String: String] = [:]
        for name in existingNames { byKey[EntryPaths.key(name)] = name }
        let stagedNames = try fileSystem.contents(of: folder)
        var taken = Set(existingNames.map { Array($0.utf8) })
        for name in stagedNames { taken.insert(Array(name.utf8)) }

        for stagedName in stagedNames {
            let staged = folder + "/" + stagedName
            var name = stagedName
            if let other = byKey[EntryPaths.key(stagedName)], Array(other.utf8) != Array(stagedName.utf8) {
                guard other == stagedName else {
                    let entry = relative.isEmpty ? stagedName : relative + "/" + stagedName
                    throw ImportError(
                        archivePath: archivePath, entryPath: entry,
                        reason: .caseCollision(with: relative.isEmpty ? other : relative + "/" + other))
                }
                name = other
            }
            let destination = documents + "/" + name
            let path = relative.isEmpty ? name : relative + "/" + name
            guard let stagedStatus = try fileSystem.status(staged) else { continue }
            guard let existing = try fileSystem.status(destination) else {
                moves.append(StagedMove(from: staged, to: destination, replaces: false))
                continue
            }
            if stagedStatus.kind == .directory && existing.kind == .directory {
                try plan(
                    staged: staged, documents: destination, relative: path, policy: policy, archivePath: archivePath,
                    moves: &moves, report: &report)
                continue
            }
            if policy == .keepBoth, stagedStatus.kind == .regular,
                let same = try copyWithSameBytes(of: staged, named: name, in: documents, existing: existingNames)
            {
                report.identical.append(relative.isEmpty ? same : relative + "/" + same)
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
                let free = Self.freeName(for: name, isFolder: stagedStatus.kind == .directory, taken: taken)
                taken.insert(Array(free.utf8))
                moves.append(StagedMove(from: staged, to: documents + "/" + free, replaces: false))
                report.renamed.append(.init(from: path, to: relative.isEmpty ? free : relative + "/" + free))
            }
        }
    }

    /// Takes a staged entry left in staging (and everything in it) out of the report's counts.
    private func notWritten(_ staged: String, report: inout ImportReport) throws {
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

    /// The name of a file of `documents` holding the same bytes as `staged`: `name` itself, or one of
    /// the names keep-both gives a copy (`name 2.ext`, `name 3.ext`...). The same bytes are the same
    /// document: importing an archive twice never makes a byte-identical copy.
    private func copyWithSameBytes(
        of staged: String, named name: String, in documents: String,
        existing: [String]
    ) throws -> String? {
        let present = Set(existing.map { Array($0.utf8) })
        var candidate = name
        var taken: Set<[UInt8]> = []
        while present.contains(Array(candidate.utf8)) {
            let path = documents + "/" + candidate
            if try fileSystem.status(path)?.kind == .regular, try sameBytes(staged, path) { return candidate }
            taken.insert(Array(candidate.utf8))
            candidate = Self.freeName(for: name, isFolder: false, taken: taken)
        }
        return nil
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
