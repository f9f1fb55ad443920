import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// An older build installed over storage a newer build upgraded: refused with a typed error and
/// nothing touched, never "nothing to do" and never old plans run over newer data.
@Suite struct DowngradeGuardTests {
    static let relocate = UpgradePlan(name: "v1-to-v2", version: "v2") {
        UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
    }
    static let split = UpgradePlan(name: "v2-to-v3", version: "v3", steps: splitPlan().steps)
    static let migrate = UpgradePlan(name: "v3-to-v4", version: "v4") {
        UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "UserData.sqlite"), [.init(id: "v4-pinned", sql: "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER")])
    }

    static func v1Container() throws -> TestContainer {
        let app = try TestContainer()
        try CoreDataStore.create(app.documentsStore().main, notes: 40, walOnlyNotes: 0)
        return app
    }

    @Test func anOlderChainOverStorageANewerChainUpgradedIsRefusedAndTouchesNothing() async throws {
        let app = try Self.v1Container()
        let newest = UpgradePlan(chain: [Self.relocate, Self.split, Self.migrate])
        #expect(newest.versions == ["v2", "v3", "v4"])
        try await Upgrader(container: app.container).upgrade(newest)
        #expect(Upgrader.storageVersion(of: app.container) == "v4")
        #expect(!Upgrader.needsUpgrade(app.container, newest))

        for older in [UpgradePlan(chain: [Self.relocate, Self.split]), UpgradePlan(chain: [Self.relocate])] {
            let before = snapshot(app.root)
            // Each of the older build's steps has nothing to do, yet it is not "nothing to do".
            #expect(Upgrader.needsUpgrade(app.container, older))
            await #expect(throws: BackstageError(.newerStorage(version: "v4", known: older.versions), path: app.container.applicationSupport.path, during: .checkingPlan)) {
                try await Upgrader(container: app.container).upgrade(older)
            }
            #expect(snapshot(app.root) == before)
        }
        // The newer build again: nothing to do.
        #expect(!Upgrader.needsUpgrade(app.container, newest))
    }

    /// The launch record (`.backstage/launch`, a symbolic link whose target is the text, read with
    /// one `readlink`) carries the guard; a damaged one, or a file in its place, is never read as
    /// "nothing to do": the check answers pending and the next run writes it again.
    @Test(arguments: ["damaged", "file", "newer format", "damaged stamp", "short stamp"])
    func aDamagedLaunchRecordIsPendingNeverNothingToDo(_ damage: String) async throws {
        let app = try Self.v1Container()
        let newest = UpgradePlan(chain: [Self.relocate, Self.split, Self.migrate])
        try await Upgrader(container: app.container).upgrade(newest)
        let record = app.container.backstageDirectory.appending(path: "launch")
        let text = try FileManager.default.destinationOfSymbolicLink(atPath: record.path)
        #expect(text.hasPrefix("backstage-launch 2\nreached v4\nknown v2 v3 v4"), "\(text)")
        #expect(!Upgrader.needsUpgrade(app.container, newest))
        // The folders the chain looks in are stamped with the stores absent from them.
        let seen = text.split(separator: "\n").first { $0.hasPrefix("seen ") }.map(String.init) ?? ""
        #expect(seen.split(separator: " ").count >= 7, "\(text)")

        try FileManager.default.removeItem(at: record)
        switch damage {
        case "damaged": try FileManager.default.createSymbolicLink(atPath: record.path, withDestinationPath: "backstage-launch 1\nreached")
        case "file": try Data(text.utf8).write(to: record)
        case "damaged stamp":
            // A word where the folder's inode belongs.
            var words = seen.split(separator: " ").map(String.init)
            words[3] = "x" + words[3]
            try FileManager.default.createSymbolicLink(atPath: record.path, withDestinationPath: text.replacingOccurrences(of: seen, with: words.joined(separator: " ")))
        case "short stamp":
            try FileManager.default.createSymbolicLink(atPath: record.path, withDestinationPath: text + "\nseen documents 2049 1311")
        default: try FileManager.default.createSymbolicLink(atPath: record.path, withDestinationPath: "backstage-launch 3\nreached v9")
        }
        #expect(Upgrader.needsUpgrade(app.container, newest), "\(damage): pending, never nothing to do")
        let report = try await Upgrader(container: app.container).upgrade(newest)
        #expect(report.steps.allSatisfy { $0.outcome != .done }, "every step was done already")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: record.path) == text)
        #expect(!Upgrader.needsUpgrade(app.container, newest))
    }

    @Test func theErrorSaysWhatHappenedAndWhatToDo() {
        let error = BackstageError(.newerStorage(version: "v4", known: ["v2", "v3"]), path: "/c/Library/Application Support", during: .checkingPlan)
        #expect(error.description.contains("upgraded to v4 by a newer build") && error.description.contains("knows v2, v3")
                && error.description.contains("changed nothing"))
    }

    @Test func plansRunOneByOneNeverRaiseAFalseAlarm() async throws {
        let app = try Self.v1Container()
        let upgrader = Upgrader(container: app.container)
        for plan in [Self.relocate, Self.split, Self.migrate] { try await upgrader.upgrade(plan) }
        for plan in [Self.relocate, Self.split, Self.migrate] {
            #expect(!Upgrader.needsUpgrade(app.container, plan), "\(plan.name)")
            let report = try await upgrader.upgrade(plan)
            #expect(report.steps.allSatisfy { $0.outcome != .done })
        }
        // And the whole chain afterwards.
        #expect(!Upgrader.needsUpgrade(app.container, UpgradePlan(chain: [Self.relocate, Self.split, Self.migrate])))
    }

    @Test func aNewerChainOverOlderStorageUpgradesIt() async throws {
        let app = try Self.v1Container()
        try await Upgrader(container: app.container).upgrade(UpgradePlan(chain: [Self.relocate]))
        #expect(Upgrader.storageVersion(of: app.container) == "v2")
        let newest = UpgradePlan(chain: [Self.relocate, Self.split, Self.migrate])
        #expect(Upgrader.needsUpgrade(app.container, newest))
        try await Upgrader(container: app.container).upgrade(newest)
        #expect(Upgrader.storageVersion(of: app.container) == "v4")
        #expect(FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: "UserData.sqlite").path))
    }

    @Test func plansWithoutAVersionRecordNone() async throws {
        let app = try Self.v1Container()
        var plan = Self.relocate
        plan.version = nil
        try await Upgrader(container: app.container).upgrade(plan)
        #expect(Upgrader.storageVersion(of: app.container) == nil)
        #expect(!Upgrader.needsUpgrade(app.container, plan))
    }

    @Test func aJSONPlanNamesItsVersion() throws {
        let plan = try JSONDecoder().decode(UpgradePlan.self, from: Data(#"{"name": "v1-to-v2", "version": "2.3", "steps": []}"#.utf8))
        #expect(plan.version == "2.3" && plan.versions == ["2.3"])
        let encoded = String(decoding: try JSONEncoder().encode(plan), as: UTF8.self)
        #expect(encoded.contains(#""version":"2.3""#))
    }
}
