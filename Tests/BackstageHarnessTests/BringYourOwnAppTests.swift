import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The harness on an app that is not the Notes sample: Apple Notes' own store from ../shared,
/// captured with `catalog init`, a v2 reached by a relocate + split plan, every fixture state, and
/// simulations that pass for a correct plan and fail, naming the table, for one that loses rows.
@Suite struct BringYourOwnAppTests {
    static let splitPlan = #"""
        {"name": "v1-to-v2", "steps": [
          {"relocate": {"from": "documents/NoteStore.sqlite", "to": "applicationSupport/NoteStore.sqlite"}},
          {"split": {"store": "applicationSupport/NoteStore.sqlite",
                     "into": [{"store": "applicationSupport/Notes.sqlite", "tables": ["ZICCLOUDSYNCINGOBJECT", "ZICNOTEDATA", "ZICCLOUDSTATE", "ZICINVITATION", "ZICLOCATION", "ZICNOTEPARTICIPANT", "ZICSERVERCHANGETOKEN", "ZICASSETSIGNATURE"]},
                              {"store": "caches/History.sqlite", "tables": ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]}]}},
          {"quarantine": {"folder": "documents/"}}
        ]}
        """#

    /// A catalog of Apple Notes' store: v1 captured, v2 added with the split plan.
    static func catalog(in scratch: TemporaryDirectory) throws -> CatalogFolder {
        let store = try SharedStores.copy(.notes, into: scratch.url)
        let folder = scratch.url.appending(path: "AppleNotes")
        let initialized = try runProcess(backstageExecutable, ["catalog", "init", folder.path, "--from", store.main.path, "--at", "documents/NoteStore.sqlite", "--app", "AppleNotes"])
        guard initialized.status == 0 else { throw Failure(initialized.stderr) }
        let plan = scratch.url.appending(path: "v1-to-v2.json")
        try Data(splitPlan.utf8).write(to: plan)
        let added = try runProcess(backstageExecutable, ["catalog", "add-version", folder.path, "v2", "--plan", plan.path, "--writable", "applicationSupport/Notes.sqlite"])
        guard added.status == 0 else { throw Failure(added.stdout + added.stderr) }
        return try CatalogFolder(at: folder)
    }

    @Test func addVersionRecordsWhatThePlanMakesOfEachStore() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.catalog(in: scratch)
        let v2 = try catalog.version("v2")
        #expect(v2.stores.map(\.location.description).sorted() == ["applicationSupport/Notes.sqlite", "caches/History.sqlite"])
        #expect(v2.writableStore?.location.description == "applicationSupport/Notes.sqlite")
        let history = try #require(v2.stores.first { $0.location.description == "caches/History.sqlite" })
        #expect(Set(history.tables) == ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING", "Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"])
        #expect(CatalogCheck.problems(in: catalog).isEmpty)
    }

    @Test func everyStateIsMadeForRealForACapturedApp() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.catalog(in: scratch)
        let store = "documents/NoteStore.sqlite"
        for state in FixtureState.allCases {
            let (container, manifest) = try generate("v1", state, size: 300_000, catalog: catalog, in: scratch)
            let set = StoreFileSet(main: container.documents.appending(path: "NoteStore.sqlite"))
            let fileManager = FileManager.default
            switch state {
            case .clean:
                #expect(manifest.stores[store] != nil && !fileManager.fileExists(atPath: set.sidecar(.journal).path))
            case .walPending:
                let all = try StoreInspector.rowCounts(of: set), mainOnly = try StoreInspector.rowCounts(of: set, includingWAL: false)
                #expect(all.values.reduce(0, +) > mainOnly.values.reduce(0, +), "committed rows only in the -wal")
            case .hotJournal:
                #expect(try Data(contentsOf: set.sidecar(.journal)).prefix(8) == Data([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]))
            case .bothLocations:
                #expect(manifest.stores[store] != nil && manifest.stores["applicationSupport/NoteStore.sqlite"] == manifest.stores[store])
            case .interrupted:
                #expect(fileManager.fileExists(atPath: container.backstageDirectory.appending(path: "journal.json").path))
            case .orphanSidecars:
                #expect(try Auditor(container: container).audit().findings.contains { $0.kind == .orphanSidecar })
            }
        }
    }

    @Test func simulateKeepsEveryRowOfACorrectPlanAndNamesTheTableALossyOneLoses() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.catalog(in: scratch)
        let simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: catalog)
        let runs = try simulator.simulate(from: "v1", to: "v2", sizes: [300_000], states: [.walPending, .interrupted], crashPoints: .count(2))
        #expect(runs.count == 4 && runs.allSatisfy(\.crashed))
        for run in runs where !run.passed { Issue.record("\(run.state.rawValue) at \(run.crashPoint?.description ?? "-"): \(run.failures.joined(separator: "; "))") }

        let lossy = scratch.url.appending(path: "lossy.json")
        try Data(Self.splitPlan.replacingOccurrences(of: #"{"quarantine""#, with: #"{"migrateSchema": {"store": "applicationSupport/Notes.sqlite", "migrations": [{"id": "trim", "sql": "DELETE FROM ZICNOTEDATA WHERE Z_PK % 3 = 0"}]}}, {"quarantine""#).utf8).write(to: lossy)
        var broken = simulator
        broken.plans = [lossy]
        // 1 MB: at 300 KB (the schema's empty tables and indexes weigh more) ZICNOTEDATA holds one row, which the trim keeps.
        let failed = try broken.simulate(from: "v1", to: "v2", sizes: [1_000_000], states: [.clean], crashPoints: .none)
        #expect(failed.count == 1 && !failed[0].passed)
        #expect(failed[0].failures.contains { $0.hasPrefix("rows lost: ZICNOTEDATA") }, "\(failed[0].failures)")
        #expect(!failed[0].failures.contains { $0.contains("ZICCLOUDSYNCINGOBJECT") }, "only the table that lost rows is named")
    }

    /// The relocation users ask for most: v2 moves the store into an App Group's shared container.
    /// The catalog records it there, fixtures of v2 carry the group with them
    /// (`Shared/AppGroup/<id>`), and a simulation with killed runs keeps every row.
    @Test func aVersionThatMovesTheStoreIntoAnAppGroupIsCapturedGeneratedAndSimulated() throws {
        let scratch = try TemporaryDirectory()
        let store = try SharedStores.copy(.notes, into: scratch.url)
        let folder = scratch.url.appending(path: "AppleNotes")
        #expect(try runProcess(backstageExecutable, ["catalog", "init", folder.path, "--from", store.main.path, "--at", "documents/NoteStore.sqlite"]).status == 0)
        let plan = scratch.url.appending(path: "v1-to-v2.json")
        try Data(#"{"name": "share", "steps": [{"relocate": {"from": "documents/NoteStore.sqlite", "to": "group.com.apple.notes/NoteStore.sqlite"}}]}"#.utf8).write(to: plan)
        let added = try runProcess(backstageExecutable, ["catalog", "add-version", folder.path, "v2", "--plan", plan.path])
        #expect(added.status == 0, "\(added.stdout) \(added.stderr)")
        let catalog = try CatalogFolder(at: folder)
        #expect(try catalog.version("v2").stores.map(\.location.description) == ["group.com.apple.notes/NoteStore.sqlite"])
        #expect(catalog.appGroups == ["group.com.apple.notes"])

        let (container, manifest) = try generate("v2", .walPending, size: 300_000, catalog: catalog, in: scratch)
        #expect(container.appGroups["group.com.apple.notes"]?.path.hasSuffix("/Shared/AppGroup/group.com.apple.notes") == true)
        #expect(manifest.stores["group.com.apple.notes/NoteStore.sqlite"] != nil)

        let runs = try Simulator(executable: URL(filePath: backstageExecutable), catalog: catalog)
            .simulate(from: "v1", to: "v2", sizes: [300_000], states: [.walPending], crashPoints: .count(2))
        #expect(runs.count == 2 && runs.allSatisfy(\.crashed), "two killed runs: \(runs.map { $0.crashPoint?.description ?? "-" })")
        for run in runs where !run.passed { Issue.record("\(run.state.rawValue) at \(run.crashPoint?.description ?? "-"): \(run.failures.joined(separator: "; "))") }
    }

    /// Apple Photos' store: an RTREE with its shadow tables, 22 triggers calling functions only Core
    /// Data registers, 81 tables. Captured, then v2 relocates it and splits it in two; the RTREE goes
    /// by its own name. `make soak` runs it at 20 MB in every state.
    @Test func photosStoreRelocatedAndSplitKeepsEveryRowWithItsRTree() throws {
        let scratch = try TemporaryDirectory()
        let store = try SharedStores.copy(.photos, into: scratch.url)
        let folder = scratch.url.appending(path: "Photos")
        #expect(try runProcess(backstageExecutable, ["catalog", "init", folder.path, "--from", store.main.path, "--at", "documents/Photos.sqlite"]).status == 0)
        let tables = try CatalogFolder(at: folder).version("v1").stores[0].tables
        let cache = ["ZMEDIAANALYSISASSETATTRIBUTES", "ZCOMPUTESYNCATTRIBUTES", "ZCHARACTERRECOGNITIONATTRIBUTES", "ZVISUALSEARCHATTRIBUTES"]
        let library = tables.filter { !cache.contains($0) && !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains($0) }
        #expect(library.contains("Z_RT_Asset_boundedByRect") && !library.contains("Z_RT_Asset_boundedByRect_node"), "the RTREE is named by its own name")
        let plan = UpgradePlan(name: "v1-to-v2") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Photos.sqlite"), to: ContainerLocation(.applicationSupport, "Photos.sqlite"))
            UpgradeStep.split(ContainerLocation(.applicationSupport, "Photos.sqlite"), into: [
                .init(store: ContainerLocation(.applicationSupport, "Library.sqlite"), tables: library),
                .init(store: ContainerLocation(.caches, "Analysis.sqlite"), tables: cache),
            ])
            // Without it, the orphaned sidecars of the orphanSidecars state stay in Documents and the
            // simulation rightly fails the run ("internal files left in Documents").
            UpgradeStep.quarantine()
        }
        let planFile = scratch.url.appending(path: "v1-to-v2.json")
        try JSONEncoder().encode(plan).write(to: planFile)
        let added = try runProcess(backstageExecutable, ["catalog", "add-version", folder.path, "v2", "--plan", planFile.path, "--writable", "applicationSupport/Library.sqlite"])
        #expect(added.status == 0, "\(added.stdout) \(added.stderr)")
        let v2 = try CatalogFolder(at: folder).version("v2")
        let libraryStore = try #require(v2.stores.first { $0.location.description == "applicationSupport/Library.sqlite" })
        let schema = try CatalogFolder(at: folder).schema(of: libraryStore)
        #expect(schema.objects.filter { $0.kind == .trigger }.count == 22, "the Core Data triggers still exist after the split")
        #expect(schema.objects.first { $0.kind == .virtualTable }?.shadowTables?.count == 3)

        let soak = ProcessInfo.processInfo.environment["BACKSTAGE_SOAK"] != nil
        let runs = try Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder(at: folder))
            .simulate(from: "v1", to: "v2", sizes: [soak ? 20_000_000 : 1_000_000], states: soak ? FixtureState.allCases : [.walPending],
                      crashPoints: soak ? .all : .count(2))
        #expect(runs.allSatisfy { $0.crashed })
        for run in runs where !run.passed { Issue.record("\(run.state.rawValue) at \(run.crashPoint?.description ?? "-"): \(run.failures.joined(separator: "; "))") }
    }
}
