import Backstage
import BackstageFixtures
import Foundation

/// Builds the container an old version of the sample app left behind, for real: stores written by
/// the app's own write pattern, later versions reached by running the catalog's upgrade plans, and
/// each state made by what causes it in the field — a writer process killed by SIGKILL, an upgrade
/// killed mid-step.
public struct FixtureGenerator: Sendable {
    /// The `backstage` executable: killed writers and killed upgrades run in child processes.
    public var executable: URL

    public init(executable: URL) {
        self.executable = executable
    }

    /// Generates `spec` into `root`, which must not exist or be empty.
    ///
    /// - returns: The number of committed notes in the app's store. Read the container's
    ///   ``FixtureManifest`` with ``FixtureManifest/read(container:spec:notes:)`` when you need it:
    ///   it copies and hashes every store, which costs more than writing it.
    @discardableResult
    public func generate(_ spec: FixtureSpec, at root: URL) throws -> Int {
        let layout = try FixtureCatalog.layout(spec.layout)
        if let existing = try? FileManager.default.contentsOfDirectory(atPath: root.path), !existing.isEmpty {
            throw FixtureError.notEmpty(path: root.path)
        }
        let container = AppContainer.iOSSandbox(root: root)
        for folder in ContainerRoot.allCases {
            try FileManager.default.createDirectory(at: container[folder], withIntermediateDirectories: true)
        }
        try writeDocuments(container.documents, seed: spec.seed)
        let notes = Int(max(16, spec.size / NotesWriter.bytesPerNote))
        let tail = max(4, notes / 10)
        let v1 = StoreFileSet(main: container.documents.appending(path: "Notes.sqlite"))

        if spec.layout == "v1" && [.walPending, .hotJournal].contains(spec.state) {
            try writeKilled(v1, seed: spec.seed, first: 1, count: notes, tail: tail,
                            ending: spec.state == .walPending ? .killBeforeCheckpoint : .killMidTransaction)
        } else {
            try NotesWriter(store: v1, seed: spec.seed).write(first: 1, count: notes, ending: .close)
        }
        // Later versions: run the real upgrades from v1 (all but the last one when it is to be interrupted).
        let chain = try FixtureCatalog.chain(from: "v1", to: spec.layout)
        let upgrader = Upgrader(container: container)
        for plan in spec.state == .interrupted ? Array(chain.dropLast()) : chain {
            try upgrader.runAndWait(plan, budget: .infinity)
        }
        guard let writable = layout.writableStore.map({ StoreFileSet(main: $0.store.url(in: container)) }) else {
            throw FixtureError.missingResource("a writable store in layout \(spec.layout)")
        }
        switch spec.state {
        case .clean:
            break
        case .walPending, .hotJournal:
            if spec.layout != "v1" {
                // The new version's app wrote more notes, and was killed.
                try writeKilled(writable, seed: spec.seed, first: notes + 1, count: tail, tail: tail,
                                ending: spec.state == .walPending ? .killBeforeCheckpoint : .killMidTransaction)
            }
        case .bothLocations:
            // A backup restored the other copy: v1's store in Documents, later ones' back in Documents.
            let copy = spec.layout == "v1" ? StoreFileSet(main: container.applicationSupport.appending(path: "Notes.sqlite")) : v1
            try copyStore(spec.layout == "v1" ? v1 : writable, to: copy)
        case .interrupted:
            try killUpgrade(into: spec.layout, container: container)
        case .orphanSidecars:
            // A store whose database the user deleted through file sharing, leaving its WAL behind.
            let gone = StoreFileSet(main: container.documents.appending(path: "Notes Backup.sqlite"))
            try writeKilled(gone, seed: spec.seed ^ 0xDEAD, first: 1, count: 24, tail: 8, ending: .killBeforeCheckpoint)
            try FileManager.default.removeItem(at: gone.main)
            try? FileManager.default.removeItem(at: gone.supportFolder)
        }
        return [.walPending, .hotJournal].contains(spec.state) && spec.layout != "v1" ? notes + tail : notes
    }

    /// Runs the writer in a child process that dies by SIGKILL.
    private func writeKilled(_ store: StoreFileSet, seed: UInt64, first: Int, count: Int, tail: Int, ending: NotesWriter.Ending) throws {
        let outcome = try ChildProcess.run(executable, ["fixture-writer", store.main.path, "--seed", String(seed), "--first", String(first),
                                                         "--count", String(count), "--tail", String(tail), "--ending", ending.rawValue])
        guard outcome.killedBySIGKILL else {
            throw FixtureError.writerFailed(path: store.main.path, reason: "it ended with status \(outcome.status) instead of being killed: \(outcome.stderr)")
        }
    }

    /// Kills the upgrade into `version` in its first step, half way (v1: the v1→v2 upgrade, at its lock).
    private func killUpgrade(into version: String, container: AppContainer) throws {
        let planName = version == "v1" ? "v1-to-v2" : try FixtureCatalog.layout(version).plan ?? ""
        let plan = try FixtureCatalog.plan(planName)
        let point: String = switch plan.steps.first {
        case .split: "split:copied"
        case .migrateSchema: "migrateSchema:migrating"
        default: version == "v1" ? "relocate:locked" : "relocate:committed"
        }
        let outcome = try ChildProcess.run(executable, ["upgrade", container.documents.deletingLastPathComponent().path,
                                                         "--plan", try FixtureCatalog.url("Plans/\(planName).json").path, "--crash-at", point])
        guard outcome.killedBySIGKILL else {
            throw FixtureError.writerFailed(path: planName, reason: "the upgrade was not killed at \(point)")
        }
    }

    private func copyStore(_ from: StoreFileSet, to: StoreFileSet) throws {
        let fm = FileManager.default
        try fm.createDirectory(at: to.directory, withIntermediateDirectories: true)
        try fm.copyItem(at: from.main, to: to.main)
        if fm.fileExists(atPath: from.sidecar(.wal).path) { try fm.copyItem(at: from.sidecar(.wal), to: to.sidecar(.wal)) }
        if fm.fileExists(atPath: from.supportFolder.path) { try fm.copyItem(at: from.supportFolder, to: to.supportFolder) }
    }

    /// The user's documents: nested folders, Unicode names, an empty folder, a large file.
    private func writeDocuments(_ documents: URL, seed: UInt64) throws {
        var random = SeededRandom(seed: seed ^ 0xD0C5)
        let files: [(String, Data)] = [
            ("Trips/Lisbon — day 1.md", Data("# Lisbon\n\nPastéis de nata at 9, tram 28 at 10.\n".utf8)),
            ("Trips/Été 2026/Café menu.txt", Data("Café crème 2,50 €\nCroissant 1,80 €\n".utf8)),
            ("Reports/2026/Q1 résumé.csv", Data("month,notes\njan,\(random.next() % 100)\nfeb,\(random.next() % 100)\n".utf8)),
            ("Photos/北京/天坛.jpg", Data(random.bytes(96_000))),
            ("Scans/receipt 0042.pdf", Data(random.bytes(40_000))),
            ("Large/archive.bin", Data(random.bytes(1_048_576))),
            (".notes-settings.json", Data("{\"theme\": \"dark\"}\n".utf8)),
        ]
        for (path, data) in files {
            let url = documents.appending(path: path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
        try FileManager.default.createDirectory(at: documents.appending(path: "Empty Folder"), withIntermediateDirectories: true)
    }
}

extension FixtureManifest {
    /// Generates `spec` at `root` and reads its manifest.
    public static func generate(_ spec: FixtureSpec, at root: URL, executable: URL) throws -> FixtureManifest {
        let notes = try FixtureGenerator(executable: executable).generate(spec, at: root)
        return try read(container: .iOSSandbox(root: root), spec: spec, notes: notes)
    }

    /// Reads the manifest of a container: every store found in the usual places, and the documents.
    public static func read(container: AppContainer, spec: FixtureSpec, notes: Int) throws -> FixtureManifest {
        var stores: [String: [String: TableDigest]] = [:]
        for root in [ContainerRoot.documents, .applicationSupport, .caches] {
            for entry in try FileClassifier().scan(container[root]) where entry.kind == .database && !entry.path.hasPrefix(".backstage") {
                let location = ContainerLocation(root, entry.path)
                stores[location.description] = try StoreDigest.tables(of: StoreFileSet(main: location.url(in: container)))
            }
        }
        var documents: [Document] = []
        var empty: [String] = []
        for entry in try FileClassifier().scan(container.documents) where !entry.kind.isInternal {
            let url = container.documents.appending(path: entry.path)
            if entry.isDirectory {
                if (try? FileManager.default.contentsOfDirectory(atPath: url.path))?.isEmpty == true { empty.append(entry.path) }
            } else {
                let data = try Data(contentsOf: url)
                documents.append(Document(path: entry.path, bytes: Int64(data.count), sha256: SHA256.hash(data)))
            }
        }
        return FixtureManifest(spec: spec, notes: notes, stores: stores, documents: documents, emptyFolders: empty)
    }
}
