import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// App Group containers: a store moved into the shared container its widgets and extensions
/// open, by the relocator and by plans, with every row; an App Group the container has no folder
/// for refused by name before anything changes.
@Suite struct AppGroupTests {
    static let group = "group.com.example.notes"

    /// An iOS-style container whose App Group folder is on another file system (/dev/shm), so the
    /// move is a verified copy.
    final class GroupApp: @unchecked Sendable {
        let app: TestContainer
        let shared: TemporaryDirectory
        let container: AppContainer

        init() throws {
            app = try TestContainer()
            shared = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
            container = app.container.addingAppGroup(AppGroupTests.group, at: shared.url.appending(path: AppGroupTests.group))
        }

        func groupStore(_ name: String) -> StoreFileSet {
            StoreFileSet(main: container.appGroups[AppGroupTests.group]!.appending(path: name))
        }
    }

    @Test func locationsAndPlansNameAnAppGroupByItsIdentifier() throws {
        let location = try #require(ContainerLocation("group.com.example.notes/Accounts/42/Notes.sqlite"))
        #expect(location.root == .appGroup("group.com.example.notes"))
        #expect(location.root.appGroupIdentifier == "group.com.example.notes")
        #expect(location.path == "Accounts/42/Notes.sqlite")
        #expect(location.description == "group.com.example.notes/Accounts/42/Notes.sqlite")
        for bad in ["group./Notes.sqlite", "groups.x/Notes.sqlite", "Group.x/Notes.sqlite", "group.x/../Notes.sqlite", "group.x//etc/passwd"] {
            #expect(ContainerLocation(bad) == nil, "\(bad) is refused")
        }
        let plan = UpgradePlan(name: "share") {
            UpgradeStep.relocate(from: ContainerLocation(.applicationSupport, "Notes.sqlite"), to: location)
        }
        let json = try JSONEncoder().encode(plan)
        #expect(String(decoding: json, as: UTF8.self).contains(#""to":"group.com.example.notes\/Accounts\/42\/Notes.sqlite""#))
        #expect(try JSONDecoder().decode(UpgradePlan.self, from: json) == plan)

        let container = AppContainer.iOSSandbox(root: URL(filePath: "/tmp/App")).addingAppGroup("group.com.example.notes", at: URL(filePath: "/tmp/Shared/G"))
        #expect(location.url(in: container).path == "/tmp/Shared/G/Accounts/42/Notes.sqlite")
        #expect(container.roots.map(\.rawValue) == ["documents", "applicationSupport", "caches", "temporary", "group.com.example.notes"])
        let decoded = try JSONDecoder().decode(AppContainer.self, from: try JSONEncoder().encode(container))
        #expect(decoded == container, "a container keeps its App Groups through JSON")
    }

    @Test func theRelocatorMovesStoresFromDocumentsOrApplicationSupportIntoTheGroup() async throws {
        let fixture = try GroupApp()
        let app = fixture.app
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 200, walOnly: 30)
        try PythonSQLite.writeThenKill(app.supportStore("Widget.sqlite").main, committed: 50, walOnly: 5)
        // Backstage's own folder is never taken for a store to move.
        try FileManager.default.createDirectory(at: app.container.quarantineDirectory, withIntermediateDirectories: true)
        try PythonSQLite.createStore(app.container.quarantineDirectory.appending(path: "Old.sqlite"), rows: 3)

        let fromDocuments = try await Relocator(container: fixture.container).relocate(RelocationOptions(to: .appGroup(Self.group)))
        #expect(fromDocuments.moved.map(\.store) == ["Notes.sqlite"])
        #expect(fromDocuments.moved.first?.strategy == .copy, "the group folder is on another file system")
        let notes = try PythonSQLite.inspect(fixture.groupStore("Notes.sqlite"))
        #expect(notes.rows == 230 && notes.integrity == "ok")
        #expect(!FileManager.default.fileExists(atPath: app.documentsStore().main.path))

        let fromSupport = try await Relocator(container: fixture.container).relocate(RelocationOptions(from: .applicationSupport, to: .appGroup(Self.group)))
        #expect(fromSupport.moved.map(\.store) == ["Widget.sqlite"], "only the app's store, not Backstage's quarantine")
        #expect(try PythonSQLite.inspect(fixture.groupStore("Widget.sqlite")).rows == 55)
        #expect(!FileManager.default.fileExists(atPath: app.supportStore("Widget.sqlite").main.path))
        #expect(FileManager.default.fileExists(atPath: app.container.quarantineDirectory.appending(path: "Old.sqlite").path))
        #expect(paths(under: fixture.shared.url, containing: ".backstage-tmp").isEmpty)

        let again = try await Relocator(container: fixture.container).relocate(RelocationOptions(from: .applicationSupport, to: .appGroup(Self.group)))
        #expect(again.moved.isEmpty, "a second run has nothing to do")
    }

    @Test func anAppGroupWithoutAFolderIsRefusedByNameAndNothingChanges() async throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 20, walOnly: 4)
        let before = snapshot(app.root)

        await #expect(throws: BackstageError(.undefinedAppGroup, path: Self.group, during: .relocating)) {
            try await Relocator(container: app.container).relocate(RelocationOptions(to: .appGroup(Self.group)))
        }
        await #expect(throws: BackstageError(.sameSourceAndDestination, path: "documents", during: .relocating)) {
            try await Relocator(container: app.container).relocate(RelocationOptions(to: .documents))
        }
        let plan = UpgradePlan(name: "share") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.appGroup(Self.group), "Notes.sqlite"))
        }
        #expect(Upgrader.needsUpgrade(app.container, plan), "never \"nothing to do\" for a plan that cannot run")
        #expect(Upgrader(container: app.container).estimate(plan).steps.isEmpty)
        await #expect(throws: BackstageError(.undefinedAppGroup, path: Self.group, during: .checkingPlan)) {
            try await Upgrader(container: app.container).upgrade(plan)
        }
        #expect(snapshot(app.root).filter { !$0.key.hasSuffix(".backstage/lock") } == before)
    }

    /// The Done-when of issue 13 on both real stores: relocated into the App Group's shared
    /// container (another file system), split in two, migrated; every row of every table compared
    /// with the original's, the Core Data triggers and the RTREE still there.
    @Test(arguments: SharedStores.Store.allCases)
    func aRealCoreDataStoreGoesThroughRelocateSplitAndMigrateIntoTheGroupWithEveryRow(_ shared: SharedStores.Store) async throws {
        let fixture = try GroupApp()
        let app = fixture.app
        let original = try SharedStores.copy(shared, into: app.documents)
        let name = original.fileName
        let before = try PythonSQLite.contentHashes(original)
        let (history, probe) = shared == .photos
            ? (["ZMEDIAANALYSISASSETATTRIBUTES", "ZCOMPUTESYNCATTRIBUTES", "ZCHARACTERRECOGNITIONATTRIBUTES", "ZVISUALSEARCHATTRIBUTES"], "ZASSET")
            : (["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"], "ZICCLOUDSYNCINGOBJECT")
        let shadow = { (table: String) in ["_node", "_rowid", "_parent"].contains { table.hasPrefix("Z_RT_") && table.hasSuffix($0) } }
        let library = before.tables.keys.filter { !history.contains($0) && !shadow($0) && !["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"].contains($0) }.sorted()
        let inGroup = { (file: String) in ContainerLocation(.appGroup(Self.group), file) }
        let plan = UpgradePlan(name: "into-the-group") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, name), to: inGroup(name))
            UpgradeStep.split(inGroup(name), into: [
                .init(store: inGroup("Library.sqlite"), tables: library),
                .init(store: ContainerLocation(.caches, "History.sqlite"), tables: history),
            ])
            UpgradeStep.migrateSchema(inGroup("Library.sqlite"), [
                .init(id: "probe-index", sql: "CREATE INDEX backstage_probe ON \(probe)(Z_PK)"),
                .init(id: "widget-settings", sql: "CREATE TABLE WidgetSettings(id INTEGER PRIMARY KEY, kind TEXT NOT NULL)"),
            ])
        }
        #expect(Upgrader.needsUpgrade(fixture.container, plan))

        let report = try await Upgrader(container: fixture.container).upgrade(plan)

        #expect(report.steps.map(\.outcome) == [.done, .done, .done])
        #expect(!Upgrader.needsUpgrade(fixture.container, plan), "nothing pending after the run")
        #expect(!FileManager.default.fileExists(atPath: original.main.path) && !FileManager.default.fileExists(atPath: fixture.groupStore(name).main.path))
        let moved = try PythonSQLite.contentHashes(fixture.groupStore("Library.sqlite"))
        let cache = try PythonSQLite.contentHashes(StoreFileSet(main: app.container.caches.appending(path: "History.sqlite")))
        for (table, hash) in before.tables where !shadow(table) {
            let after = history.contains(table) ? cache.tables[table] : moved.tables[table]
            #expect(after == hash, "\(shared): every row of \(table) kept")
        }
        for table in ["Z_PRIMARYKEY", "Z_MODELCACHE"] {
            #expect(cache.tables[table] == before.tables[table], "\(shared): Core Data's \(table) goes into every target")
        }
        // Z_METADATA too, each target after the first with a store UUID of its own, the rest of its plist the same.
        #expect(moved.tables["Z_METADATA"] == before.tables["Z_METADATA"], "\(shared): the first target keeps the UUID")
        let identities = try PythonSQLite.run(
            """
            import sqlite3, plistlib, sys
            def read(path):
                uuid, blob = sqlite3.connect(path).execute("select Z_UUID, Z_PLIST from Z_METADATA").fetchone()
                return uuid, plistlib.loads(blob)
            (a, pa), (b, pb) = read(sys.argv[1]), read(sys.argv[2])
            same = {k: v for k, v in pa.items() if k != "NSStoreUUID"} == {k: v for k, v in pb.items() if k != "NSStoreUUID"}
            print(a != b, pa.get("NSStoreUUID", a) == a, pb.get("NSStoreUUID", b) == b, same)
            """, [fixture.groupStore("Library.sqlite").main.path, app.container.caches.appending(path: "History.sqlite").path])
        #expect(identities.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "True True True True", "\(shared): \(identities.stdout) \(identities.stderr)")
        #expect(moved.tables["WidgetSettings"] != nil)
        #expect(moved.triggers.union(cache.triggers) == before.triggers, "\(shared): every trigger kept, with its table")
        #expect(moved.indexes.union(cache.indexes) == before.indexes.union(["backstage_probe"]))
        if shared == .photos {
            #expect(moved.tables.keys.contains("Z_RT_Asset_boundedByRect_node"), "the RTREE moved with its shadow tables")
        }
    }
}
