import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The sample split: user data to Application Support, thumbnails to Caches, logs discarded.
func splitPlan(from store: ContainerLocation = ContainerLocation(.applicationSupport, "Notes.sqlite")) -> UpgradePlan {
    UpgradePlan(name: "split") {
        UpgradeStep.split(store, into: [
            .init(store: ContainerLocation(.applicationSupport, "UserData.sqlite"), tables: CoreDataStore.userTables),
            .init(store: ContainerLocation(.caches, "Cache.sqlite"), tables: CoreDataStore.cacheTables),
        ], discard: ["ZLOG"])
    }
}

@Suite struct UpgradeTests {
    @Test func splittingIntoTwoStoresAndADiscardedTableKeepsEveryRowIndexAndTrigger() async throws {
        let app = try TestContainer()
        let source = app.supportStore()
        let files = try CoreDataStore.create(source.main, notes: 300)
        let before = try PythonSQLite.contentHashes(source)

        let report = try await Upgrader(container: app.container).upgrade(splitPlan())

        let userData = StoreFileSet(main: app.applicationSupport.appending(path: "UserData.sqlite"))
        let cache = StoreFileSet(main: app.container.caches.appending(path: "Cache.sqlite"))
        let user = try PythonSQLite.contentHashes(userData)
        let thumbs = try PythonSQLite.contentHashes(cache)
        for table in CoreDataStore.userTables + CoreDataStore.metadataTables { #expect(user.tables[table] == before.tables[table], "\(table)") }
        for table in CoreDataStore.cacheTables + CoreDataStore.metadataTables { #expect(thumbs.tables[table] == before.tables[table], "\(table)") }
        #expect(Set(user.tables.keys) == Set(CoreDataStore.userTables + CoreDataStore.metadataTables))
        #expect(Set(thumbs.tables.keys) == Set(CoreDataStore.cacheTables + CoreDataStore.metadataTables))
        #expect(user.indexes == ["ZNOTE_ZFOLDER_INDEX"] && user.triggers == ["ZNOTE_TOUCH"])
        #expect(try PythonSQLite.inspect(userData, table: "ZNOTE", titleColumn: "ZTITLE").integrity == "ok")
        #expect(try PythonSQLite.schema(userData).journalMode == "wal")
        // External data follows its rows; the file no row references is kept in quarantine.
        let moved = try FileManager.default.contentsOfDirectory(atPath: userData.supportFolder.appending(path: "_EXTERNAL_DATA").path)
        #expect(Set(moved) == Set(files.referenced))
        #expect(report.relocation.quarantined.contains { $0.from.hasSuffix(files.unreferenced) && $0.reason == .unreferencedExternalData })
        // The source is gone, with its sidecars and support folder; nothing temporary is left.
        for url in source.allPaths { #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.lastPathComponent)") }
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        #expect(!Upgrader.needsUpgrade(app.container, splitPlan()))
    }

    @Test func aTableNoTargetClaimsStopsTheSplitBeforeAnythingChanges() async throws {
        let app = try TestContainer()
        try CoreDataStore.create(app.supportStore().main, notes: 20, walOnlyNotes: 0)
        var plan = splitPlan()
        plan.steps = [UpgradeStep.split(ContainerLocation(.applicationSupport, "Notes.sqlite"), into: [
            .init(store: ContainerLocation(.applicationSupport, "UserData.sqlite"), tables: CoreDataStore.userTables),
        ], discard: ["ZLOG"])]
        let before = snapshot(app.supportStore())

        await #expect(throws: BackstageError(.unassignedTable(table: "ZTHUMBNAIL"), path: app.supportStore().main.path, during: .checkingPlan)) {
            try await Upgrader(container: app.container).upgrade(plan)
        }
        // The database and its external data are untouched (SQLite's close drops the empty -wal).
        #expect(snapshot(app.supportStore()).filter { !$0.key.hasSuffix("-wal") && !$0.key.hasSuffix("-shm") }
                == before.filter { !$0.key.hasSuffix("-wal") && !$0.key.hasSuffix("-shm") })
        #expect(!FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: "UserData.sqlite").path))
    }

    @Test func aCommitInterruptedAfterVerificationIsFinishedByTheNextRun() async throws {
        let app = try TestContainer()
        try CoreDataStore.create(app.supportStore().main, notes: 100)
        let before = try PythonSQLite.contentHashes(app.supportStore())
        let faults = FaultInjector()
        faults.fail(.rename, pathContains: "Cache.sqlite.backstage-tmp", code: EIO)
        var failing = Upgrader(container: app.container)
        failing.fileSystem = FileSystem(faults: faults)

        #expect {
            try failing.runAndWait(splitPlan(), budget: 20)
        } throws: { error in
            // The injected failure itself, naming the temporary it could not rename: not any error.
            let cause: FileSystemError? = switch error {
            case let error as FileSystemError: error
            case let error as BackstageError: if case .system(let failure) = error.cause { failure } else { nil }
            default: nil
            }
            return cause?.code == EIO && cause?.operation == .rename && cause?.path.hasSuffix("Cache.sqlite.backstage-tmp") == true
        }
        #expect(FileManager.default.fileExists(atPath: app.supportStore().main.path), "the source stays until every target is in place")
        #expect(Upgrader.needsUpgrade(app.container, splitPlan()))

        let report = try await Upgrader(container: app.container).upgrade(splitPlan())

        #expect(report.relocation.recovered.first?.hasPrefix("completed: split") == true)
        let user = try PythonSQLite.contentHashes(StoreFileSet(main: app.applicationSupport.appending(path: "UserData.sqlite")))
        #expect(user.tables["ZNOTE"] == before.tables["ZNOTE"])
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path))
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    struct ExternalDataCase: CustomTestStringConvertible, Sendable {
        var cachesOnAnotherFileSystem: Bool
        var interruptedCommit: Bool
        var testDescription: String {
            (cachesOnAnotherFileSystem ? "Caches on /dev/shm" : "one file system") + (interruptedCommit ? ", commit interrupted" : "")
        }
    }

    /// Both targets reference external data (the thumbnails more of it, and one file both), so the
    /// source's folder goes whole to Cache.sqlite, or file by file when Caches is on another file
    /// system; each target ends up with exactly the files its rows reference, byte for byte, and
    /// the file no row references in quarantine, also when the commit fails after moving the folder.
    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: "/dev/shm"), "/dev/shm is the second file system"),
          arguments: [ExternalDataCase(cachesOnAnotherFileSystem: false, interruptedCommit: false),
                      ExternalDataCase(cachesOnAnotherFileSystem: false, interruptedCommit: true),
                      ExternalDataCase(cachesOnAnotherFileSystem: true, interruptedCommit: false)])
    func externalDataReferencedByBothTargetsFollowsEachTargetsRows(_ setup: ExternalDataCase) async throws {
        let app = try TestContainer()
        let other = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let container = setup.cachesOnAnotherFileSystem
            ? AppContainer(documents: app.container.documents, applicationSupport: app.container.applicationSupport,
                           caches: other.url, temporary: app.container.temporary)
            : app.container
        let source = app.supportStore()
        let files = try CoreDataStore.create(source.main, notes: 100, walOnlyNotes: 0)
        let external = source.supportFolder.appending(path: "_EXTERNAL_DATA")
        // Thumbnails 1...12 become files of their own; thumbnail 13 shares the first attachment's file.
        let thumbnails = try PythonSQLite.run("""
            import sqlite3, sys, os, uuid
            c = sqlite3.connect(sys.argv[1]); names = []
            for i in range(1, 13):
                name = str(uuid.UUID(int=i)); names.append(name)
                open(os.path.join(sys.argv[2], name), "wb").write(os.urandom(5000 + i))
                c.execute("update ZTHUMBNAIL set ZIMAGE = ? where Z_PK = ?", (b"\\x02" + name.encode() + b"\\x00", i))
            c.execute("update ZTHUMBNAIL set ZIMAGE = ? where Z_PK = 13", (b"\\x02" + sys.argv[3].encode() + b"\\x00",))
            c.commit(); print(",".join(names))
            """, [source.main.path, external.path, files.referenced[0]]).stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").map(String.init)
        #expect(thumbnails.count == 12 && files.referenced.count == 10)
        let bytes = snapshot(external)
        if setup.interruptedCommit {
            let faults = FaultInjector()
            faults.fail(.rename, pathContains: "Cache.sqlite.backstage-tmp", code: EIO)
            var failing = Upgrader(container: container)
            failing.fileSystem = FileSystem(faults: faults)
            #expect(throws: (any Error).self) { try failing.runAndWait(splitPlan(), budget: 20) }
            #expect(!FileManager.default.fileExists(atPath: container.caches.appending(path: "Cache.sqlite").path))
        }

        let report = try await Upgrader(container: container).upgrade(splitPlan())

        let userFolder = StoreFileSet(main: container.applicationSupport.appending(path: "UserData.sqlite")).supportFolder.appending(path: "_EXTERNAL_DATA")
        let cacheFolder = StoreFileSet(main: container.caches.appending(path: "Cache.sqlite")).supportFolder.appending(path: "_EXTERNAL_DATA")
        let user = snapshot(userFolder), cache = snapshot(cacheFolder)
        #expect(Set(user.keys) == Set(files.referenced), "the attachments' files, and only those")
        #expect(Set(cache.keys) == Set(thumbnails + [files.referenced[0]]), "the thumbnails' files and the shared one")
        for (name, data) in user.merging(cache, uniquingKeysWith: { a, _ in a }) { #expect(data == bytes[name], "\(name) byte for byte") }
        let quarantined = report.relocation.quarantined.filter { $0.reason == .unreferencedExternalData }
        if !setup.interruptedCommit {
            #expect(quarantined.count == 1 && quarantined.first?.from.hasSuffix(files.unreferenced) == true)
        }
        let kept = try FileManager.default.subpathsOfDirectory(atPath: container.quarantineDirectory.path)
        #expect(kept.contains { $0.hasSuffix(files.unreferenced) }, "the file no row references is kept")
        #expect(!FileManager.default.fileExists(atPath: source.supportFolder.path) && !FileManager.default.fileExists(atPath: source.main.path))
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty && paths(under: other.url, containing: ".backstage-tmp").isEmpty)
        #expect(try Auditor(container: container).audit().isClean)
    }

    /// A BLOB shaped like an external data reference whose "name" climbs out of the folder is not
    /// a file Core Data wrote: the split neither links nor copies what it points at.
    @Test func aReferenceThatIsNotAUUIDNamesNoFile() async throws {
        let app = try TestContainer()
        let source = app.supportStore()
        let files = try CoreDataStore.create(source.main, notes: 30, walOnlyNotes: 0)
        let climbing = String(repeating: "../", count: 8) + "etc/hostname"
        #expect(climbing.utf8.count == 36 && FileManager.default.fileExists(atPath: "/etc/hostname"))
        _ = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("update ZTHUMBNAIL set ZIMAGE = ? where Z_PK = 5", (b"\\x02" + sys.argv[2].encode() + b"\\x00",))
            c.commit()
            """, [source.main.path, climbing])

        try await Upgrader(container: app.container).upgrade(splitPlan())

        let folder = StoreFileSet(main: app.applicationSupport.appending(path: "UserData.sqlite")).supportFolder.appending(path: "_EXTERNAL_DATA")
        #expect(Set(try FileManager.default.subpathsOfDirectory(atPath: folder.path)) == Set(files.referenced))
        #expect(!FileManager.default.fileExists(atPath: StoreFileSet(main: app.container.caches.appending(path: "Cache.sqlite")).supportFolder.path))
        #expect(paths(under: app.root, containing: "hostname").isEmpty)
    }

    @Test func cancellingTheTaskOfUpgradeThrowsCancellationErrorNeverAnEmptyReport() async throws {
        let app = try TestContainer()
        try CoreDataStore.create(app.supportStore().main, notes: 200)
        var upgrader = Upgrader(container: app.container)
        let gate = CancellationGate(at: .copying)
        upgrader.boundaryHook = { point in gate.hook("\(point.kind)", point.phase) }
        let task = Task { try await upgrader.upgrade(splitPlan()) }
        try await gate.cancel(task)

        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(FileManager.default.fileExists(atPath: app.supportStore().main.path), "the split was undone")
        #expect(Upgrader.needsUpgrade(app.container, splitPlan()), "and is still pending")
    }

    @Test func cancellingASplitLeavesTheSourceIntactAndNoTargets() async throws {
        let app = try TestContainer()
        try CoreDataStore.create(app.supportStore().main, notes: 200, walOnlyNotes: 0)
        let before = snapshot(app.supportStore())
        let cancelled = Flag()
        var upgrader = Upgrader(container: app.container)
        upgrader.boundaryHook = { point in if point.phase == .copying { cancelled.set() } }

        #expect(throws: BackstageError(.cancelled, path: "split applicationSupport/Notes.sqlite", during: .upgrading)) {
            try upgrader.runAndWait(splitPlan(), budget: 20, isCancelled: cancelled.get)
        }
        #expect(snapshot(app.supportStore())["Notes.sqlite"] == before["Notes.sqlite"])
        #expect(snapshot(app.supportStore()).filter { $0.key.contains("SUPPORT") } == before.filter { $0.key.contains("SUPPORT") })
        #expect(!FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: "UserData.sqlite").path))
        #expect(!FileManager.default.fileExists(atPath: app.container.caches.appending(path: "Cache.sqlite").path))
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path))
    }

    @Test func aMigrationAlreadyAppliedIsNeverAppliedTwice() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.supportStore().main, rows: 10)
        // Not idempotent: applying it twice fails with "duplicate column name".
        let plan = UpgradePlan(name: "pinned") {
            UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), [
                .init(id: "add-pinned", sql: "ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0"),
                .init(id: "pin-first", sql: "UPDATE note SET pinned = 1 WHERE id = 1"),
            ])
        }
        #expect(Upgrader.needsUpgrade(app.container, plan))

        let first = try await Upgrader(container: app.container).upgrade(plan)
        #expect(first.steps.map(\.outcome) == [.done])
        #expect(!Upgrader.needsUpgrade(app.container, plan))
        let second = try await Upgrader(container: app.container).upgrade(plan)
        #expect(second.steps.map(\.outcome) == [.skipped])

        // Without its stamp (say, restored from a backup), the store is opened once and found up to date.
        try FileManager.default.removeItem(at: app.container.backstageDirectory.appending(path: "schema"))
        #expect(Upgrader.needsUpgrade(app.container, plan))
        let third = try await Upgrader(container: app.container).upgrade(plan)
        #expect(third.steps.map(\.outcome) == [.upToDate])
        #expect(!Upgrader.needsUpgrade(app.container, plan))
        let applied = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("select count(*) from grdb_migrations").fetchone()[0], c.execute("select sum(pinned) from note").fetchone()[0])
            """, [app.supportStore().main.path])
        #expect(applied.stdout == "2 1\n")
    }

    /// A migration that fails on the rows (its schema alone lets it pass the preflight's rehearsal).
    @Test func aFailingMigrationIsRolledBackAndNamed() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.supportStore().main, rows: 10)
        let plan = UpgradePlan(name: "broken") {
            UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), [
                .init(id: "half", sql: "DELETE FROM note WHERE id > 5; CREATE UNIQUE INDEX one_word ON note(substr(title, 1, 4))"),
            ])
        }
        await #expect {
            try await Upgrader(container: app.container).upgrade(plan)
        } throws: { error in
            guard let error = error as? BackstageError, case .migrationFailed(let id, let message) = error.cause, case let store = error.path else { return false }
            return store == app.supportStore().main.path && id == "half" && message.contains("UNIQUE constraint failed")
        }
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 10)
    }

    @Test func needsUpgradeSeesEveryKindOfPendingWork() async throws {
        let app = try TestContainer()
        let plan = UpgradePlan(name: "v1-to-v2") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
            UpgradeStep.quarantine()
        }
        #expect(!Upgrader.needsUpgrade(app.container, plan), "an empty container has nothing to do")
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 10, walOnly: 3)
        #expect(Upgrader.needsUpgrade(app.container, plan), "a store in Documents")
        try await Upgrader(container: app.container).upgrade(plan)
        #expect(!Upgrader.needsUpgrade(app.container, plan), "right after the plan completed")

        try app.writeDocument("Old.sqlite-wal", Data([0x37, 0x7f, 0x06, 0x82, 0x00, 0x2d, 0xe2, 0x18] + [UInt8](repeating: 0, count: 24)))
        #expect(Upgrader.needsUpgrade(app.container, plan), "an orphan sidecar to quarantine")
        try await Upgrader(container: app.container).upgrade(plan)
        #expect(!Upgrader.needsUpgrade(app.container, plan))

        // What a crash leaves: a journal, and no launch record (its first write removed it; a
        // step killed after its commit is in UpgradeCommandTests).
        try FileManager.default.removeItem(at: app.container.backstageDirectory.appending(path: "launch"))
        #expect(!Upgrader.needsUpgrade(app.container, plan), "no record: the check looks at everything")
        try Data("{}".utf8).write(to: app.container.backstageDirectory.appending(path: "journal.json"))
        #expect(Upgrader.needsUpgrade(app.container, plan), "a journal left by a crash")
    }

    @Test func aPlanOverTheLaunchBudgetSaysSoBeforeTouchingAnything() async throws {
        let app = try TestContainer()
        try CoreDataStore.create(app.supportStore().main, notes: 200)
        let before = snapshot(app.root)
        let upgrader = Upgrader(container: app.container)

        let estimate = upgrader.estimate(splitPlan(), budget: 0.000_001)
        #expect(estimate.exceedsBudget && estimate.bytes > 0 && estimate.steps.count == 1)

        var events: [String] = []
        #expect(throws: BackstageError(.overBudget(estimated: estimate.seconds, budget: 0.000_001), path: "", during: .checkingPlan)) {
            try upgrader.runAndWait(splitPlan(), budget: 0.000_001, refuseOverBudget: true, events: { event in
                if case .planned(let planned) = event { events.append("planned \(planned.exceedsBudget)") } else { events.append("other") }
            })
        }
        #expect(events == ["planned true"])
        #expect(snapshot(app.root).filter { !$0.key.contains(".backstage/") } == before)
        #expect(!upgrader.estimate(splitPlan(), budget: 60).exceedsBudget)
    }

    /// A split rewrites the rows and renames the external data: its estimate counts the database,
    /// not the support folder, unless a target is on another file system, where its files are copied.
    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: "/dev/shm"), "/dev/shm is the second file system"))
    func aSplitIsEstimatedByTheBytesItCopies() throws {
        let app = try TestContainer()
        let store = app.supportStore()
        try CoreDataStore.create(store.main, notes: 200)
        let database = try [store.main, store.sidecar(.wal)].reduce(Int64(0)) {
            $0 + ((try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int64) ?? 0)
        }
        let support = try FileManager.default.subpathsOfDirectory(atPath: store.supportFolder.path).reduce(Int64(0)) {
            let attributes = try FileManager.default.attributesOfItem(atPath: store.supportFolder.appending(path: $1).path)
            return $0 + (attributes[.type] as? FileAttributeType == .typeRegular ? (attributes[.size] as? Int64) ?? 0 : 0)
        }
        #expect(support > 100_000)

        #expect(Upgrader(container: app.container).estimate(splitPlan()).bytes == database)

        let other = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let elsewhere = AppContainer(documents: app.container.documents, applicationSupport: app.container.applicationSupport,
                                     caches: other.url, temporary: app.container.temporary)
        #expect(Upgrader(container: elsewhere).estimate(splitPlan()).bytes == database + support)
    }

    /// A migration rewrites the database alone: its estimate counts the database and its `-wal`,
    /// never the external data files of its support folder (not even listed).
    @Test func aMigrationIsEstimatedByItsDatabaseAlone() throws {
        let app = try TestContainer()
        let store = app.supportStore()
        try CoreDataStore.create(store.main, notes: 200)
        let database = try [store.main, store.sidecar(.wal)].reduce(Int64(0)) {
            $0 + ((try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int64) ?? 0)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.externalDataFolder.path).count > 10)
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(
                .support("Notes.sqlite"), [.init(id: "v2", sql: "ALTER TABLE ZNOTE ADD COLUMN ZPINNED")])
        }
        #expect(Upgrader(container: app.container).estimate(plan).bytes == database)
    }

    @Test func aWholeChainFromV1ToV4KeepsEveryNote() async throws {
        let app = try TestContainer()
        try CoreDataStore.create(app.documentsStore().main, notes: 150, walOnlyNotes: 20)
        let before = try PythonSQLite.contentHashes(app.documentsStore())
        var plan = UpgradePlan(name: "v1-to-v3") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
            UpgradeStep.quarantine()
        }
        plan.steps += splitPlan().steps
        plan.steps.append(.migrateSchema(ContainerLocation(.applicationSupport, "UserData.sqlite"), [
            .init(id: "v3-pinned", sql: "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER NOT NULL DEFAULT 0"),
        ]))
        // v4: one store per account.
        plan.steps.append(.relocate(from: ContainerLocation(.applicationSupport, "UserData.sqlite"),
                                    to: ContainerLocation(.applicationSupport, "Accounts/42/UserData.sqlite")))
        let estimate = Upgrader(container: app.container).estimate(plan)
        #expect(estimate.steps.map(\.index) == [0, 2, 3, 4], "steps whose input an earlier step brings are estimated too")
        #expect(estimate.steps.allSatisfy { $0.bytes > 0 })
        var phases: [String] = []
        for try await event in Upgrader(container: app.container).run(plan) {
            if case .progress(let progress) = event { phases.append("\(progress.stepIndex):\(progress.phase.rawValue)") }
        }
        #expect(phases.contains("2:verified") && phases.contains("3:migrated"))

        let userData = StoreFileSet(main: app.applicationSupport.appending(path: "Accounts/42/UserData.sqlite"))
        let notes = try PythonSQLite.inspect(userData, table: "ZNOTE", titleColumn: "ZTITLE")
        #expect(notes.rows == 170 && notes.integrity == "ok")
        #expect(FileManager.default.fileExists(atPath: userData.supportFolder.appending(path: "_EXTERNAL_DATA").path))
        #expect(!FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: "UserData.sqlite").path))
        #expect(try PythonSQLite.contentHashes(userData).tables["ZFOLDER"] == before.tables["ZFOLDER"])
        #expect(try Auditor(container: app.container).audit().isClean)
        #expect(!Upgrader.needsUpgrade(app.container, plan))
    }

    @Test func plansReadFromJSONAndABadPlanIsNamed() throws {
        let scratch = try TemporaryDirectory()
        let url = scratch.url.appending(path: "plan.json")
        try Data("""
            {"name": "v2-to-v3", "steps": [
              {"split": {"store": "applicationSupport/Notes.sqlite",
                         "into": [{"store": "applicationSupport/UserData.sqlite", "tables": ["ZFOLDER", "ZNOTE", "ZATTACHMENT"]},
                                  {"store": "caches/Cache.sqlite", "tables": ["ZTHUMBNAIL"]}],
                         "discard": ["ZLOG"]}},
              {"migrateSchema": {"store": "applicationSupport/UserData.sqlite", "migrations": [{"id": "v3-pinned", "sql": "SELECT 1"}]}},
              {"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Accounts/42/Notes.sqlite", "strategy": "copy"}},
              {"quarantine": {"folder": "documents/"}}
            ]}
            """.utf8).write(to: url)
        let plan = try UpgradePlan.load(from: url)
        #expect(plan.steps.map(\.kind) == [.split, .migrateSchema, .relocate, .quarantine])
        let accounts = ["1", "2"]
        let built = UpgradePlan(name: "built") {
            for account in accounts {
                UpgradeStep.relocate(from: ContainerLocation(.applicationSupport, "\(account).sqlite"), to: ContainerLocation(.applicationSupport, "Accounts/\(account)/UserData.sqlite"))
            }
            if accounts.count > 1 { UpgradeStep.quarantine() } else { UpgradeStep.migrateSchema(ContainerLocation(.caches, "x.sqlite"), []) }
        }
        #expect(built.steps.map(\.kind) == [.relocate, .relocate, .quarantine], "the builder takes for and if/else")

        try Data(#"{"name": "no-discard", "steps": [{"split": {"store": "applicationSupport/Notes.sqlite", "into": [{"store": "caches/All.sqlite", "tables": ["ZNOTE"]}]}}]}"#.utf8).write(to: url)
        #expect(try UpgradePlan.load(from: url).steps == [.split(ContainerLocation(.applicationSupport, "Notes.sqlite"), into: [.init(store: ContainerLocation(.caches, "All.sqlite"), tables: ["ZNOTE"])])],
                "a JSON split without \"discard\" discards nothing, as in Swift")
        #expect(plan.steps[0] == splitPlan().steps[0])
        #expect(try JSONDecoder().decode(UpgradePlan.self, from: JSONEncoder().encode(plan)) == plan)

        try Data(#"{"name": "x", "steps": [{"relocate": {"from": "Documents/../etc/passwd", "to": "caches/x"}}]}"#.utf8).write(to: url)
        #expect {
            try UpgradePlan.load(from: url)
        } throws: { error in
            guard let error = error as? BackstageError, case .invalidPlan(let reason) = error.cause, case let path = error.path else { return false }
            return path == url.path && reason.contains("is not a container location")
        }
    }

    @Test(arguments: [
        (#"{"version": 4, "step": "relocate", "phase": "committed"}"#, "newer"),
        (#"{"version": 1, "step": "teleport", "phase": "committed", "source": "documents/Notes.sqlite", "destination": "applicationSupport/Notes.sqlite", "startedAt": "2026-01-01T00:00:00Z"}"#, "unknown step"),
        (#"{"version": 1, "step": "relocate", "phase": "halfway", "source": "documents/Notes.sqlite", "destination": "applicationSupport/Notes.sqlite", "startedAt": "2026-01-01T00:00:00Z"}"#, "unknown phase"),
        ("", "empty"),
    ])
    func aJournalThisVersionCannotReadIsRefusedAndNothingTouched(journal: String, what: String) async throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 5, walOnly: 2)
        try FileManager.default.createDirectory(at: app.container.backstageDirectory, withIntermediateDirectories: true)
        let journalURL = app.container.backstageDirectory.appending(path: "journal.json")
        try Data(journal.utf8).write(to: journalURL)
        let before = snapshot(app.root)

        await #expect {
            try await Relocator(container: app.container).relocate()
        } throws: { error in
            guard let error = error as? BackstageError, error.path == journalURL.path else { return false }
            return switch (error.cause, what) {
            case (.newerJournal(4, 3), "newer"), (.unreadableJournal, "unknown step"), (.unreadableJournal, "unknown phase"), (.unreadableJournal, "empty"): true
            default: false
            }
        }
        #expect(snapshot(app.root).filter { !$0.key.hasSuffix(".backstage/lock") } == before, "\(what): the store stays where it is and the journal is kept for the version that wrote it")
    }

    /// Apple Photos' store: updating ZASSET fires triggers that call NSCoreDataTriggerUpdateAffectedObjectValue,
    /// a function only Core Data registers. The migration runs, its triggers fire, every row stays.
    @Test func aMigrationOfARealCoreDataStoreFiresItsTriggersWithoutCoreData() async throws {
        let app = try TestContainer()
        let store = try SharedStores.copy(.photos, into: app.applicationSupport)
        let before = try StoreInspector.rowCounts(of: store)
        let plan = UpgradePlan(name: "hide-even-assets") {
            UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Photos.sqlite"), [
                .init(id: "hide-even", sql: "UPDATE ZASSET SET ZHIDDEN = 1 WHERE Z_PK % 2 = 0"),
            ])
        }

        try await Upgrader(container: app.container).upgrade(plan)

        let after = try StoreInspector.rowCounts(of: store)
        #expect(after.filter { $0.key != "grdb_migrations" } == before, "every row of every table kept")
        let check = try PythonSQLite.run("""
            import sqlite3, sys, shutil, tempfile, os
            d = tempfile.mkdtemp()
            for f in os.listdir(sys.argv[1]):
                if f.startswith("Photos.sqlite"): shutil.copy(os.path.join(sys.argv[1], f), d)
            c = sqlite3.connect(os.path.join(d, "Photos.sqlite"))
            print(c.execute("select count(*) from sqlite_master where type = 'trigger'").fetchone()[0],
                  c.execute("select count(*) from ZASSET where ZHIDDEN = 1 and Z_PK % 2 = 0").fetchone()[0] == c.execute("select count(*) from ZASSET where Z_PK % 2 = 0").fetchone()[0],
                  c.execute("pragma integrity_check").fetchone()[0])
            """, [app.applicationSupport.path])
        #expect(check.stdout == "22 True ok\n", "the triggers are still there, the migration applied, the store sound: \(check.stdout)\(check.stderr)")
    }
}
