// Every Swift block of the README and the DocC articles, compiled here (DocumentationTests
// checks each is the documentation's, character for character). Each is the body of a function
// whose parameters are the names the documentation leaves to the reader (appRoot, container...).
// Blocks a test runs are marked where it runs them instead (ReadmeExampleTests); package
// manifests and the example test of "Testing upgrades in Swift" are checked elsewhere.
import Backstage
import BackstageExport
import BackstageHarness
import Foundation
import GRDB
import Testing

/// Stand-ins for the app's own views in the examples.
final class ProgressView { var fraction = 0.0 }
func showProgressScreen(_ seconds: Double) {}
final class Button: @unchecked Sendable { var action: @Sendable () -> Void = {} }
nonisolated(unsafe) let progressView = ProgressView()
let cancelButton = Button()

enum Snippets {

    static func backstageOverview(appRoot: URL) async throws {
        // doc: Sources/Backstage/Backstage.docc/Backstage.md#0
        let container = AppContainer.iOSSandbox(root: appRoot)
            .declaringStores(StoreDeclarations(["MyApp.sqlite"]))   // the app's own; any other database is the user's
        let audit = try Auditor(container: container).audit()
        if !audit.isClean {
            let report = try await Relocator(container: container).relocate()
            print(report.moved.map(\.store))
        }
        // end doc
    }

    static func loadOneStore(appRoot: URL) async throws {
        // doc: Sources/Backstage/Backstage.docc/DescribingAndLoadingStores.md#0
        let stores = StoreContainer(name: "Notes", container: .iOSSandbox(root: appRoot))
        try await stores.loadStores()      // Library/Application Support/Notes.sqlite, WAL mode
        try stores.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS note (id INTEGER PRIMARY KEY, title TEXT)")
        }
        // end doc
    }

    static func describeAStore(stores: StoreContainer) {
        // doc: Sources/Backstage/Backstage.docc/DescribingAndLoadingStores.md#1
        var description = StoreDescription(name: "Notes")
        description.setPragma("DELETE", named: "journal_mode")   // no -wal or -shm files at all
        description.timeout = 10                                 // wait 10 s for another process's lock
        description.isReadOnly = true                            // writes fail with BackstageError, cause .readOnlyStore
        stores.storeDescriptions = [description]
        // end doc
    }

    static func severalStores(container: AppContainer) async throws -> [Row] {
        // doc: Sources/Backstage/Backstage.docc/DescribingAndLoadingStores.md#2
        let stores = StoreContainer(name: "Notes", container: container,
                                    model: StoreModel(["UserData": ["folder", "note"], "Cache": ["thumbnail"]]))
        stores.storeDescriptions = [
            StoreDescription(name: "UserData", configuration: "UserData"),
            StoreDescription(name: "Cache", url: container.caches.appending(path: "Cache.sqlite"), configuration: "Cache"),
        ]
        try await stores.loadStores()
        try stores.write(table: "thumbnail") { db in            // goes to Caches/Cache.sqlite
            try db.execute(sql: "INSERT INTO thumbnail (note, data) VALUES (1, x'00')")
        }
        let rows = try stores.readAcrossStores { db in           // read-only, each store attached by name
            try Row.fetchAll(db, sql: "SELECT n.title FROM UserData.note n JOIN Cache.thumbnail t ON t.note = n.id")
        }
        // end doc
        return rows
    }

    static func switchStores(stores: StoreContainer, testStoreURL: URL, realStoreURL: URL) async throws {
        // doc: Sources/Backstage/Backstage.docc/DescribingAndLoadingStores.md#3
        try await stores.switchStore(to: testStoreURL)   // a test database swapped in
        // ... writes go to the test store; the real one is closed and untouched ...
        try await stores.switchStore(to: realStoreURL)   // and swapped back
        // end doc
    }

    static func accountStores(stores: StoreContainer) throws -> any DatabaseWriter {
        // doc: Sources/Backstage/Backstage.docc/DescribingAndLoadingStores.md#4
        let alice = try stores.accountStore("alice")   // Application Support/Accounts/alice/Notes.sqlite
        // end doc
        return alice
    }

    static func relocate(appRoot: URL) async throws {
        // doc: Sources/Backstage/Backstage.docc/RelocatingAStore.md#0
        let container = AppContainer.iOSSandbox(root: appRoot)   // or .xdg(appName: "Notes")
            .declaringStores(StoreDeclarations(["Notes.sqlite", "Accounts/*/User.sqlite"]))
        let report = try await Relocator(container: container).relocate()
        for store in report.moved {
            print("\(store.store) → \(store.to) by \(store.strategy), \(store.bytes) bytes")
        }
        for file in report.quarantined {
            print("kept out of sight: \(file.from) → \(file.to) (\(file.reason))")
        }
        // end doc
    }

    static func relocateIntoAnAppGroup(appRoot: URL) async throws {
        // doc: Sources/Backstage/Backstage.docc/RelocatingAStore.md#1
        // On iOS: FileManager.default.containerURL(forSecurityApplicationGroupIdentifier:).
        // On Linux: any folder the app and its helpers share.
        let groupFolder = URL(filePath: "/srv/notes/shared")
        let app = AppContainer.iOSSandbox(root: appRoot).addingAppGroup("group.com.example.notes", at: groupFolder)
        try await Relocator(container: app).relocate(RelocationOptions(
            stores: ["Notes.sqlite"], from: .applicationSupport, to: .appGroup("group.com.example.notes")))
        // end doc
    }

    static func relocateWithProgress(container: AppContainer, progressView: ProgressView, show: (RelocationReport) -> Void) async throws {
        // doc: Sources/Backstage/Backstage.docc/RelocatingAStore.md#2
        for try await event in Relocator(container: container).events() {
            switch event {
            case .progress(let progress): progressView.fraction = progress.fractionCompleted
            case .finished(let report): show(report)
            }
        }
        // end doc
    }

    static func atLaunch(container: AppContainer, plan: UpgradePlan) {
        // doc: Sources/Backstage/Backstage.docc/UpgradingStorage.md#1
        if Upgrader.needsUpgrade(container, plan) {
            // show the upgrade screen
        }
        // end doc
    }

    static func aChain() -> UpgradePlan {
        // doc: Sources/Backstage/Backstage.docc/UpgradingStorage.md#2
        let chain = UpgradePlan(chain: [
            UpgradePlan(name: "v1-to-v2", version: "v2") {
                UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"),
                                     to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
            },
            UpgradePlan(name: "v2-to-v3", version: "v3") {
                UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), [
                    .init(id: "v3-pinned", sql: "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER NOT NULL DEFAULT 0"),
                ])
            },
        ])
        // end doc
        return chain
    }

    static func runWithProgress(container: AppContainer, plan: UpgradePlan) async throws {
        // doc: Sources/Backstage/Backstage.docc/UpgradingStorage.md#3
        let upgrader = Upgrader(container: container)
        let upgrade = Task {
            for try await event in upgrader.run(plan, budget: 20) {
                switch event {
                case .planned(let estimate):
                    if estimate.exceedsBudget { showProgressScreen(estimate.seconds) }
                case .progress(let progress):
                    progressView.fraction = progress.fractionDone   // 0...1, only grows
                case .finished(let report):
                    print(report.steps.map(\.outcome))
                }
            }
        }
        cancelButton.action = { upgrade.cancel() }   // the loop throws CancellationError once undone
        try await upgrade.value
        // end doc
    }

    static func export(containerURL: URL) async throws {
        // doc: Sources/BackstageExport/BackstageExport.docc/ExportingAndImportingDocuments.md#0
        let exporter = Exporter(container: .iOSSandbox(root: containerURL))
        for try await event in exporter.events(to: URL(filePath: "Notes.zip"), options: ExportOptions(format: .zip, level: 6)) {
            switch event {
            case .progress(let progress): print("\(Int(progress.fraction * 100)) %")
            case .finished(let report): print("\(report.entries) entries, \(report.bytes) bytes")
            }
        }
        // end doc
    }

    static func importArchive(containerURL: URL) async throws {
        // doc: Sources/BackstageExport/BackstageExport.docc/ExportingAndImportingDocuments.md#1
        let importer = Importer(container: .iOSSandbox(root: containerURL))
        do {
            let report = try await importer.importArchive(URL(filePath: "Backup.zip"), options: ImportOptions(onConflict: .keepBoth))
            print(report.renamed)   // [Renamed(from: "Notes/a.txt", to: "Notes/a 2.txt")]
        } catch let error as ImportError {
            print(error)            // Backup.zip: entry ../../.bashrc: its path climbs out of the folder with "..", refused
        }
        // end doc
    }

    static func makeAFixture(backstageExecutable: URL, folder: URL) throws -> Int? {
        // doc: Sources/BackstageHarness/BackstageHarness.docc/SimulatingUpgrades.md#0
        let generator = FixtureGenerator(executable: backstageExecutable, catalog: try CatalogFolder.notes())
        let manifest = try FixtureManifest.generate(FixtureSpec(layout: "v1", size: 2_000_000, state: .walPending, seed: 7), at: folder, with: generator)
        let notes = manifest.stores["documents/Notes.sqlite"]?["ZNOTE"]?.rows   // every committed note, WAL included
        // end doc
        return notes
    }

    static func compareSchemas() throws {
        // doc: Sources/BackstageHarness/BackstageHarness.docc/TestingUpgradesInSwift.md#2
        let fresh = try SchemaDescription(contentsOf: URL(filePath: "cookbook-v3.sql"))
        let upgraded = try SchemaDescription(contentsOf: URL(filePath: "Upgraded/Cookbook.sqlite"))
        for difference in fresh.differences(from: upgraded) { print(difference) }
        // end doc
    }

}
