import Backstage
import Foundation

/// One folder of the move-in's plan: the staged folder, the folder of Documents it goes into, and
/// the names taken there.
struct PlanLevel {
    var staged: String
    var documents: String
    /// The folder's path relative to Documents, empty for Documents itself.
    var relative: String
    var policy: ConflictPolicy
    var archivePath: String
    /// The names the folder of Documents has.
    var existing: [String]
    /// `existing` by their collision key (``EntryPaths/key(_:)``).
    var byKey: [String: String]
    /// The names of Documents and of staging, and those given to copies so far.
    var taken: Set<[UInt8]>

    /// The path, relative to Documents, of `name` in this folder.
    func path(of name: String) -> String { relative.isEmpty ? name : relative + "/" + name }

    /// The name the staged `stagedName` has in Documents: its own, or the one Documents has that
    /// equals it but for Unicode normalization (the same document). One that equals it but for
    /// letter case is refused.
    func documentsName(of stagedName: String) throws -> String {
        guard let other = byKey[EntryPaths.key(stagedName)], Array(other.utf8) != Array(stagedName.utf8) else {
            return stagedName
        }
        guard other == stagedName else {
            throw ImportError(
                archivePath: archivePath, entryPath: path(of: stagedName), reason: .caseCollision(with: path(of: other))
            )
        }
        return other
    }
}

/// A user's database staged with its companions: its `-wal`, `-shm`, `-journal` and its Core Data
/// support folder (`.Name_SUPPORT`, whose files its rows name). One unit: renamed, skipped and
/// replaced together, so that a copy never reads another database's external data.
struct CompanionUnit {
    enum Role: Hashable {
        case database
        case sidecar(Sidecar)
        case support
    }

    struct Member {
        /// The staged name.
        var staged: String
        var role: Role
        var kind: FileStatus.Kind
    }

    /// The database first, then its companions.
    var members: [Member]

    /// What `member` is called beside the database `database`.
    static func name(of role: Role, database: String) -> String {
        switch role {
        case .database: database
        case .sidecar(let sidecar): database + sidecar.rawValue
        case .support: StoreFileSet.supportFolderName(ofStoreNamed: database)
        }
    }

    /// Every name a database called `database` claims: its own, its sidecars', its support folder's.
    static func claimedNames(database: String) -> [String] {
        [name(of: .database, database: database), name(of: .support, database: database)]
            + Sidecar.allCases.map { name(of: .sidecar($0), database: database) }
    }
}

extension Importer {
    /// The user's databases staged in `level`'s folder, each with the companions staged beside it.
    /// A folder with no name of a sidecar or a support folder, staged or in Documents, has none
    /// (nothing is read).
    func companionUnits(in level: PlanLevel, stagedNames: [String]) throws -> [CompanionUnit] {
        let mayPair = { (name: String) in
            FileClassifier.isCoreDataSupportFolder(name) || FileClassifier.splitSidecar(name) != nil
        }
        guard stagedNames.contains(where: mayPair) || level.existing.contains(where: mayPair) else { return [] }
        // Every declared store was refused before: what the classifier finds here is the user's.
        let entries = try FileClassifier(fileSystem: fileSystem, declarations: .none).scan(
            URL(filePath: level.staged, directoryHint: .isDirectory), recursive: false, measuringFolders: false)
        var kinds: [String: FileKind] = [:]
        for entry in entries { kinds[entry.path] = entry.kind }
        var units: [CompanionUnit] = []
        for entry in entries where entry.kind == .userDatabase {
            var members = [CompanionUnit.Member(staged: entry.path, role: .database, kind: .regular)]
            for sidecar in Sidecar.allCases
            where kinds[CompanionUnit.name(of: .sidecar(sidecar), database: entry.path)] == .userDatabaseSidecar {
                members.append(
                    .init(
                        staged: CompanionUnit.name(of: .sidecar(sidecar), database: entry.path),
                        role: .sidecar(sidecar),
                        kind: .regular))
            }
            let support = CompanionUnit.name(of: .support, database: entry.path)
            if kinds[support] == .userDatabaseSupport {
                members.append(.init(staged: support, role: .support, kind: .directory))
            }
            units.append(CompanionUnit(members: members))
        }
        return units
    }

    /// Plans a user's database and its companions as one: all moved in when Documents has none of
    /// their names; else, by the policy, all kept as Documents has them (skip), all imported under
    /// the next number free for every name the copy claims (keep-both: `Notes 2.sqlite` with
    /// `.Notes 2_SUPPORT`), nothing when Documents has the same database with the same companions,
    /// or all replacing Documents' (replace: the support folder merged, its files replaced; a `-wal`
    /// or `-journal` of Documents' database the archive does not carry refuses it).
    func plan(
        _ unit: CompanionUnit, in level: inout PlanLevel, moves: inout [StagedMove], report: inout ImportReport
    ) throws {
        guard let database = unit.members.first else { return }
        let name = try level.documentsName(of: database.staged)
        let documents = level.documents
        let archivePath = level.archivePath
        func status(_ name: String) throws -> FileStatus? { try fileSystem.status(documents + "/" + name) }
        func staged(_ member: CompanionUnit.Member) -> String { level.staged + "/" + member.staged }
        func target(_ member: CompanionUnit.Member, _ database: String) -> String {
            CompanionUnit.name(of: member.role, database: database)
        }
        var conflict = false
        for member in unit.members where try status(target(member, name)) != nil { conflict = true }
        guard conflict else {
            for member in unit.members {
                moves.append(
                    StagedMove(from: staged(member), to: documents + "/" + target(member, name), replaces: false))
            }
            return
        }
        switch level.policy {
        case .skip:
            for member in unit.members {
                report.skipped.append(level.path(of: target(member, name)))
                try notWritten(staged(member), report: &report)
            }
        case .keepBoth:
            // The same database (its bytes), under its name or a copy's, is that document: nothing of
            // it is imported again, only the companions it lacks join it.
            var candidate = name
            var tried: Set<[UInt8]> = []
            while try status(candidate) != nil {
                if try sameContent(staged(database), documents + "/" + candidate, kind: .regular) {
                    try complete(candidate, with: unit, in: level, moves: &moves, report: &report)
                    return
                }
                tried.insert(Array(candidate.utf8))
                candidate = Self.freeName(for: name, isFolder: false, taken: tried)
            }
            // The first number free for every name the copy claims: never beside another's companions.
            var excluded = level.taken
            var free = Self.freeName(for: name, isFolder: false, taken: excluded)
            while CompanionUnit.claimedNames(database: free).contains(where: { level.taken.contains(Array($0.utf8)) }) {
                excluded.insert(Array(free.utf8))
                free = Self.freeName(for: name, isFolder: false, taken: excluded)
            }
            for member in unit.members {
                let renamed = target(member, free)
                level.taken.insert(Array(renamed.utf8))
                moves.append(StagedMove(from: staged(member), to: documents + "/" + renamed, replaces: false))
                report.renamed.append(.init(from: level.path(of: target(member, name)), to: level.path(of: renamed)))
            }
        case .replace:
            let carried = Set(unit.members.map(\.role))
            for sidecar in [Sidecar.wal, .journal] where !carried.contains(.sidecar(sidecar)) {
                let left = CompanionUnit.name(of: .sidecar(sidecar), database: name)
                if try status(left) != nil {
                    throw ImportError(
                        archivePath: archivePath, entryPath: level.path(of: name),
                        reason: .companionLeftBehind(sidecar: level.path(of: left)))
                }
            }
            for member in unit.members {
                let to = target(member, name)
                let present = try status(to)
                if member.role == .support, present?.kind == .directory {
                    try plan(
                        staged: staged(member), documents: documents + "/" + to, relative: level.path(of: to),
                        policy: .replace, archivePath: archivePath, moves: &moves, report: &report)
                    continue
                }
                if let present, present.kind == .directory || member.kind == .directory {
                    throw ImportError(
                        archivePath: archivePath, entryPath: level.path(of: to),
                        reason: .conflict(existing: level.path(of: to)))
                }
                moves.append(StagedMove(from: staged(member), to: documents + "/" + to, replaces: present != nil))
                if present != nil { report.replaced.append(level.path(of: to)) }
            }
        }
    }

    /// The companions of `unit` beside `database`, a database of Documents with the same bytes as the
    /// unit's (keep-both): the database is already there; a companion Documents lacks joins it, one
    /// with the same content is already there, a support folder is merged (a file already there is
    /// kept: a row finds it by its name), any other companion of Documents' is kept.
    private func complete(
        _ database: String, with unit: CompanionUnit, in level: PlanLevel, moves: inout [StagedMove],
        report: inout ImportReport
    ) throws {
        for member in unit.members {
            let staged = level.staged + "/" + member.staged
            let target = CompanionUnit.name(of: member.role, database: database)
            let destination = level.documents + "/" + target
            let present = try fileSystem.status(destination)
            if member.role != .database, present == nil {
                moves.append(StagedMove(from: staged, to: destination, replaces: false))
                if target != member.staged {
                    report.renamed.append(.init(from: level.path(of: member.staged), to: level.path(of: target)))
                }
            } else if try member.role == .database || sameContent(staged, destination, kind: member.kind) {
                report.identical.append(level.path(of: target))
                try notWritten(staged, report: &report)
            } else if member.role == .support, present?.kind == .directory {
                try plan(
                    staged: staged, documents: destination, relative: level.path(of: target), policy: .skip,
                    archivePath: level.archivePath, moves: &moves, report: &report)
            } else {
                report.skipped.append(level.path(of: target))
                try notWritten(staged, report: &report)
            }
        }
    }

    /// True when the staged internal entry `entry` (a path relative to Documents) is the support
    /// folder of a user's database Documents already has beside it: that database's companion, which
    /// the import merges into its support folder, never an orphan.
    func isSupportOfDocumentsDatabase(_ entry: ClassifiedFile) throws -> Bool {
        guard entry.kind == .coreDataSupport, entry.isDirectory else { return false }
        let folder = (entry.path as NSString).deletingLastPathComponent
        let name = (entry.path as NSString).lastPathComponent
        let documents = container.documents.path + (folder.isEmpty ? "" : "/" + folder)
        guard try fileSystem.status(documents)?.kind == .directory else { return false }
        for candidate in try fileSystem.contents(of: documents)
        where StoreFileSet.supportFolderName(ofStoreNamed: candidate) == name {
            let path = folder.isEmpty ? candidate : folder + "/" + candidate
            guard !container.declaredStores.declares(path),
                try fileSystem.status(documents + "/" + candidate)?.kind == .regular
            else { continue }
            if SQLiteHeader.hasMagic(try fileSystem.readPrefix(documents + "/" + candidate, count: 16)) { return true }
        }
        return false
    }
}
