import Backstage
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// `needsUpgrade` on the launch path: never "pending" while the app just uses its store, always
/// "pending" when the store was replaced, went back in time, or the plan gained work.
@Suite struct LaunchCheckTests {
    /// The launch check's own calls (stack-built paths, no allocation) are the ones faults are
    /// injected into: a test of them tests the path users run.
    @Test func faultsReachTheLaunchChecksOwnCalls() throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 3, journalMode: "delete")
        let location = ContainerLocation(.documents, "Notes.sqlite")
        let faults = FaultInjector()
        let fileSystem = FileSystem(faults: faults)
        #expect(fileSystem.exists(location, in: app.container))
        var absent = false
        #expect(fileSystem.statusAndPrefix(location, in: app.container, count: 16, absent: &absent) != nil)

        faults.fail(.stat, pathContains: "Notes.sqlite", code: EIO)
        faults.fail(.open, pathContains: "Notes.sqlite", code: EIO)
        #expect(!fileSystem.exists(location, in: app.container))
        #expect(fileSystem.status(location, in: app.container) == nil)
        #expect(fileSystem.statusAndPrefix(location, in: app.container, count: 16, absent: &absent) == nil)
        #expect(!absent, "a failed open is not an absent store")
    }

    static let plan = UpgradePlan(name: "v2") {
        UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), [
            .init(id: "v2-pinned", sql: "ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0"),
        ])
    }

    @Test func aHundredLaunchesOfAnAppUsingItsStoreNeverSayPending() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.supportStore().main, rows: 10)
        try await Upgrader(container: app.container).upgrade(Self.plan)
        #expect(!Upgrader.needsUpgrade(app.container, Self.plan))

        for launch in 1...100 {
            // The app opens its store through StoreContainer (a GRDB pool: the schema cookie moves),
            // writes, and now and then changes its own schema with its own migrator.
            let stores = StoreContainer(name: "Notes", container: app.container)
            try await stores.loadStores()
            try stores.write { db in
                try db.execute(sql: "INSERT INTO note (title, body) VALUES (?, zeroblob(100))", arguments: ["launch \(launch)"])
                if launch % 25 == 0 { try db.execute(sql: "CREATE INDEX note_title_\(launch) ON note (title)") }
            }
            #expect(!Upgrader.needsUpgrade(app.container, Self.plan), "launch \(launch) says pending")
            // Closed before the next launch and before the rows are read from a copy: a pool left
            // to its deinit could delete its -wal while the copy lists and copies the files.
            try stores.close()
        }
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 110)
    }

    @Test func aReplacedOlderOrExtendedStoreIsPending() async throws {
        let app = try TestContainer()
        let store = app.supportStore()
        try PythonSQLite.createStore(store.main, rows: 10, journalMode: "delete")
        let older = app.root.appending(path: "older.sqlite")
        try FileManager.default.copyItem(at: store.main, to: older)
        try await Upgrader(container: app.container).upgrade(Self.plan)
        #expect(!Upgrader.needsUpgrade(app.container, Self.plan))

        // An older copy written over the store in place (same inode, lower schema cookie).
        try shell("cp '\(older.path)' '\(store.main.path)'")
        #expect(Upgrader.needsUpgrade(app.container, Self.plan), "overwritten in place by an older copy")
        try await Upgrader(container: app.container).upgrade(Self.plan)
        #expect(!Upgrader.needsUpgrade(app.container, Self.plan))

        // A restored backup moved into place (another file).
        let restored = app.root.appending(path: "restored.sqlite")
        try FileManager.default.copyItem(at: store.main, to: restored)
        try FileManager.default.removeItem(at: store.main)
        try FileManager.default.moveItem(at: restored, to: store.main)
        #expect(Upgrader.needsUpgrade(app.container, Self.plan), "replaced by another file")
        let report = try await Upgrader(container: app.container).upgrade(Self.plan)
        #expect(report.steps.map(\.outcome) == [.upToDate], "opened once, nothing to apply, stamped again")
        #expect(!Upgrader.needsUpgrade(app.container, Self.plan))

        // The plan gained a migration.
        let extended = UpgradePlan(name: "v3") {
            UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), [
                .init(id: "v2-pinned", sql: "ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0"),
                .init(id: "v3-archived", sql: "ALTER TABLE note ADD COLUMN archived INTEGER NOT NULL DEFAULT 0"),
            ])
        }
        #expect(Upgrader.needsUpgrade(app.container, extended))
    }

    /// A quarantine step is pending exactly when Documents holds a stray, whatever its name's
    /// script; a folder of the user's files, look-alikes included, is not (the launch check lists
    /// names first and reads bytes only for a name that could be a stray).
    @Test func aStrayInDocumentsIsPendingAndTheUsersFilesAreNot() throws {
        let plan = UpgradePlan(name: "tidy") { UpgradeStep.quarantine() }
        let app = try TestContainer()
        for (name, text) in [("Trip-journal", "day one"), ("Diary-wal", String(repeating: "\0", count: 64)), ("Cargo.lock", "[[package]]"),
                             ("naïve-shm.txt", "x"), ("Résumé.pdf", "%PDF"), ("backstage-tmp.txt", "not ours")] {
            try app.writeDocument(name, Data(text.utf8))
        }
        try FileManager.default.createDirectory(at: app.documents.appending(path: "Photos_SUPPORT"), withIntermediateDirectories: true)
        #expect(!Upgrader.needsUpgrade(app.container, plan), "only the user's files")

        let store = try TestContainer()
        try PythonSQLite.writeThenKill(store.documentsStore("Café.sqlite").main, committed: 5, walOnly: 3)
        let wal = try Data(contentsOf: store.documentsStore("Café.sqlite").sidecar(.wal))
        let strays: [(String, (URL) throws -> Void)] = [
            ("Café.sqlite-wal", { try wal.write(to: $0) }),
            ("北京.sqlite-wal", { try wal.write(to: $0) }),
            (".Notes.sqlite.backstage-tmp", { try Data("half a copy".utf8).write(to: $0) }),
            (".Gone_SUPPORT", { try FileManager.default.createDirectory(at: $0.appending(path: "_EXTERNAL_DATA"), withIntermediateDirectories: true) }),
        ]
        for (name, make) in strays {
            let url = app.documents.appending(path: name)
            try make(url)
            #expect(Upgrader.needsUpgrade(app.container, plan), "\(name) is a stray")
            try FileManager.default.removeItem(at: url)
        }
        #expect(!Upgrader.needsUpgrade(app.container, plan))
    }

    /// The record lists the stores the plan looks for in each folder that were absent when the run
    /// left it (Documents, quarantined: `quiet`; Application Support: `seen`), and the check trusts
    /// that while the folder keeps its change time. A store brought back changes that time; a store
    /// that was there (kept in Documents, migrated in place) is never listed, so an older copy
    /// written over it in place is still seen.
    @Test func storesSeenAbsentFromAnUnchangedFolderAreNotLookedForAndAReturnIsSeen() async throws {
        let keep = ContainerLocation(.documents, "Keep.sqlite")
        let plan = UpgradePlan(name: "v2", version: "v2") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
            UpgradeStep.migrateSchema(keep, [.init(id: "v2-pinned", sql: "ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")])
            UpgradeStep.quarantine()
            UpgradeStep.relocate(from: ContainerLocation(.applicationSupport, "Old.sqlite"), to: ContainerLocation(.applicationSupport, "Archive/Old.sqlite"))
        }
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 10, journalMode: "delete")
        let kept = app.documentsStore("Keep.sqlite")
        try PythonSQLite.createStore(kept.main, rows: 5, journalMode: "delete")
        let older = app.root.appending(path: "older.sqlite")
        try FileManager.default.copyItem(at: kept.main, to: older)
        try await Upgrader(container: app.container).upgrade(plan)

        let record = try FileManager.default.destinationOfSymbolicLink(atPath: app.container.backstageDirectory.appending(path: "launch").path)
        let quiet = record.split(separator: "\n").first { $0.hasPrefix("quiet documents ") }.map { $0.split(separator: " ") } ?? []
        #expect(quiet.count == 7 && quiet.last == "Notes.sqlite", "Notes.sqlite seen absent, Keep.sqlite present: \(record)")
        #expect(record.split(separator: "\n").contains { $0.hasPrefix("seen applicationSupport ") && $0.hasSuffix(" Old.sqlite") }, "\(record)")
        #expect(!Upgrader.needsUpgrade(app.container, plan))

        // Kept in Documents: an older copy written over it in place leaves the folder unchanged.
        try shell("cp '\(older.path)' '\(kept.main.path)'")
        #expect(Upgrader.needsUpgrade(app.container, plan), "overwritten in place by an older copy")
        try await Upgrader(container: app.container).upgrade(plan)
        #expect(!Upgrader.needsUpgrade(app.container, plan))

        // Moved out, then brought back (a restore): the folder changed, so it is looked for.
        try FileManager.default.copyItem(at: app.supportStore().main, to: app.documentsStore().main)
        #expect(Upgrader.needsUpgrade(app.container, plan), "a store back in Documents")
        try FileManager.default.removeItem(at: app.documentsStore().main)
        #expect(!Upgrader.needsUpgrade(app.container, plan))
        try FileManager.default.copyItem(at: kept.main, to: app.applicationSupport.appending(path: "Old.sqlite"))
        #expect(Upgrader.needsUpgrade(app.container, plan), "a store where a later step looks for it, in Application Support")
    }

    /// A record with an escape (a version named with a space) is read on its bytes like any
    /// other; its stamps vouch the same way.
    @Test func anEscapedRecordVouchesTheSameWay() async throws {
        let plan = UpgradePlan(name: "beta", version: "2.0 beta") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
            UpgradeStep.quarantine()
        }
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 10, journalMode: "delete")
        try await Upgrader(container: app.container).upgrade(plan)
        let record = try FileManager.default.destinationOfSymbolicLink(atPath: app.container.backstageDirectory.appending(path: "launch").path)
        #expect(record.contains("reached 2.0%20beta") && record.contains("\nquiet documents "), "\(record)")
        #expect(!Upgrader.needsUpgrade(app.container, plan))
        try FileManager.default.copyItem(at: app.supportStore().main, to: app.documentsStore().main)
        #expect(Upgrader.needsUpgrade(app.container, plan), "a store back in Documents")
    }

    /// A record of format 1 (an earlier build wrote it) makes no promise about the journal: the
    /// check still reads it, and still looks for a crashed step beside it.
    @Test func aRecordOfTheFormerFormatStillLooksForACrashedStep() throws {
        let plan = UpgradePlan(name: "v2", version: "v2", steps: [.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))])
        let app = try TestContainer()
        let folder = app.container.backstageDirectory
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder.appending(path: "launch").path, withDestinationPath: "backstage-launch 1\nreached v2\nknown v1 v2")
        #expect(!Upgrader.needsUpgrade(app.container, plan), "format 1 is read")
        #expect(Upgrader.needsUpgrade(app.container, UpgradePlan(name: "v1", version: "v1", steps: [])), "and its downgrade guard holds")

        try Data("{}".utf8).write(to: folder.appending(path: "journal.json"))
        #expect(Upgrader.needsUpgrade(app.container, plan), "a journal beside a format-1 record is a crashed step")
    }

    /// A run leaves a launch record vouching that Documents had no stray at its change time, so
    /// the check does not list it; a stray arriving right after the run changes that time and is
    /// pending at once.
    @Test func aStrayArrivingRightAfterARunIsPendingAtOnce() async throws {
        let plan = UpgradePlan(name: "tidy", version: "v2") { UpgradeStep.quarantine() }
        let app = try TestContainer()
        try app.writeDocument("Letter.txt", Data("dear".utf8))
        try PythonSQLite.writeThenKill(app.root.appending(path: "Old.sqlite"), committed: 3, walOnly: 2)
        let wal = try Data(contentsOf: app.root.appending(path: "Old.sqlite-wal"))
        try wal.write(to: app.documents.appending(path: "Old.sqlite-wal"))
        #expect(Upgrader.needsUpgrade(app.container, plan))

        try await Upgrader(container: app.container).upgrade(plan)

        let record = try FileManager.default.destinationOfSymbolicLink(atPath: app.container.backstageDirectory.appending(path: "launch").path)
        #expect(record.contains("\nquiet documents "), "the run vouches for Documents: \(record)")
        #expect(!Upgrader.needsUpgrade(app.container, plan))
        for name in ["Old.sqlite-wal", ".Notes.sqlite.backstage-tmp"] {
            try wal.write(to: app.documents.appending(path: name))
            #expect(Upgrader.needsUpgrade(app.container, plan), "\(name) right after the run")
            try FileManager.default.removeItem(at: app.documents.appending(path: name))
            #expect(!Upgrader.needsUpgrade(app.container, plan), "the folder listed again: nothing left")
        }
        try app.writeDocument("Saved.txt", Data("a new document".utf8))
        #expect(!Upgrader.needsUpgrade(app.container, plan), "a document is not a stray")
    }

    /// The check looks the record up with what the plan asks, worked out with its steps: a plan
    /// whose steps change after it was made asks about the steps it has now. (Asked about its
    /// former step, the record would vouch that Notes.sqlite is gone from the unchanged Documents,
    /// and the store still there to move would be missed.)
    @Test func aPlanAsksAboutTheStepsItHasNow() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 10, journalMode: "delete")
        try PythonSQLite.createStore(app.documentsStore("Photos.sqlite").main, rows: 4, journalMode: "delete")
        let notes = UpgradeStep.relocate(
            from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
        let photos = UpgradeStep.relocate(
            from: ContainerLocation(.documents, "Photos.sqlite"), to: ContainerLocation(.applicationSupport, "Photos.sqlite"))
        var plan = UpgradePlan(name: "v2", version: "v2", steps: [notes])
        try await Upgrader(container: app.container).upgrade(plan)
        #expect(!Upgrader.needsUpgrade(app.container, plan))

        plan.steps = [photos]
        #expect(Upgrader.needsUpgrade(app.container, plan), "Photos.sqlite is still in Documents")
        plan.steps.insert(notes, at: 0)
        #expect(Upgrader.needsUpgrade(app.container, plan), "Photos.sqlite, second")
        plan.steps.removeLast()
        #expect(!Upgrader.needsUpgrade(app.container, plan))
        #expect(Upgrader.needsUpgrade(app.container, UpgradePlan(chain: [plan, UpgradePlan(name: "v3", version: "v3", steps: [photos])])))
    }

    /// A plan read from JSON is the plan made in code and asks the record the same questions,
    /// which the record answers for both alike, a folder whose name it escapes (a space) included.
    @Test func aPlanReadFromJSONVouchesLikeTheSamePlanInCode() async throws {
        let app = try TestContainer()
        let old = ContainerLocation(.applicationSupport, "Old Stores/Notes.sqlite")
        let built = UpgradePlan(name: "v2", version: "v2") {
            UpgradeStep.relocate(from: old, to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
            UpgradeStep.quarantine()
        }
        let json = app.root.appending(path: "v2.json")
        try Data(
            """
            {"name": "v2", "version": "v2", "steps": [
              {"relocate": {"from": "applicationSupport/Old Stores/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}},
              {"quarantine": {"folder": "documents/"}}]}
            """.utf8
        ).write(to: json)
        let loaded = try UpgradePlan.load(from: json)
        #expect(loaded == built)
        let asked = ["absent Notes.sqlite from applicationSupport/Old Stores", "quiet documents"]
        #expect(Self.questions(loaded) == asked && Self.questions(built) == asked)
        let group = UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.appGroup("group.com.example.notes"), "Notes.sqlite"))
        #expect(Self.questions(UpgradePlan(name: "group", steps: [group])) == [nil], "an App Group's step is asked the long way")
        let oldStore = app.applicationSupport.appending(path: "Old Stores/Notes.sqlite")
        try FileManager.default.createDirectory(at: oldStore.deletingLastPathComponent(), withIntermediateDirectories: true)
        try PythonSQLite.createStore(oldStore, rows: 10, journalMode: "delete")
        #expect(Upgrader.needsUpgrade(app.container, loaded) && Upgrader.needsUpgrade(app.container, built))

        try await Upgrader(container: app.container).upgrade(loaded)
        let record = try FileManager.default.destinationOfSymbolicLink(atPath: app.container.backstageDirectory.appending(path: "launch").path)
        #expect(record.contains("\nseen applicationSupport/Old%20Stores ") && record.contains("\nquiet documents "), "\(record)")
        #expect(!Upgrader.needsUpgrade(app.container, loaded) && !Upgrader.needsUpgrade(app.container, built))
        // The question's decoded bytes find the record's escaped stamp.
        let found = Array(record.utf8).withUnsafeBytes { bytes in
            LaunchRecordView(bytes).flatMap { view in
                Array("applicationSupport/Old Stores".utf8).withUnsafeBytes { folder in
                    Array("Notes.sqlite".utf8).withUnsafeBytes { view.stamp(folder: folder, absent: $0) }
                }
            }
        }
        #expect(found != nil, "\(record)")
        try FileManager.default.copyItem(at: app.supportStore().main, to: oldStore)
        #expect(Upgrader.needsUpgrade(app.container, loaded) && Upgrader.needsUpgrade(app.container, built), "a store back")
    }

    /// What `plan` asks the launch record of each step, in words.
    static func questions(_ plan: UpgradePlan) -> [String?] {
        let bytes = plan.launchQuestions.bytes
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        return plan.launchQuestions.questions.map { question in
            question.map {
                $0.isQuarantine ? "quiet \(text($0.folderWord))" : "absent \(text($0.name)) from \(text($0.folderWord))"
            }
        }
    }
}
