import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Issue 54: a refused run (the store in use) wrote `.backstage/versions` and withdrew the launch
/// record: a refusal must write nothing, the container byte-identical after it.
@Suite struct RefusedRunTests {
    static let v2 = UpgradePlan(name: "v1-to-v2", version: "v2") {
        UpgradeStep.relocate(
            from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
    }
    static let v3 = UpgradePlan(name: "v2-to-v3", version: "v3") {
        UpgradeStep.relocate(
            from: ContainerLocation(.applicationSupport, "Notes.sqlite"),
            to: ContainerLocation(.applicationSupport, "Accounts/1/Notes.sqlite"))
    }

    @Test func aRunRefusedBecauseTheStoreIsInUseLeavesTheWholeContainerByteIdentical() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 30)
        // The app upgraded once: its launch record and guard are in `.backstage`.
        try await Upgrader(container: app.container).upgrade(UpgradePlan(chain: [Self.v2]))
        let backstage = app.container.backstageDirectory
        #expect(FileManager.default.fileExists(atPath: backstage.appending(path: "versions").path))

        let holder = try PythonSQLite.holdOpen(app.supportStore().main)
        defer {
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        let before = treeDigest(app.root)
        #expect(before.keys.contains("Library/Application Support/.backstage/launch"), "\(before.keys.sorted())")
        var upgrader = Upgrader(container: app.container)
        upgrader.busyTimeout = 0.3
        do {
            try await upgrader.upgrade(UpgradePlan(chain: [Self.v2, Self.v3]))
            Issue.record("the run was not refused")
        } catch {
            #expect("\(error)".contains("in use") || "\(error)".contains("open"), "\(error)")
            #expect("\(error)".contains(app.supportStore().main.path), "\(error)")
        }
        let after = treeDigest(app.root)
        #expect(after == before, "changed: \(Set(after.keys).symmetricDifference(before.keys).sorted()), \(before.keys.filter { after[$0] != before[$0] }.sorted())")
        #expect(Upgrader.storageVersion(of: app.container) == "v2")

        // Once the store is closed, the same run goes through.
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        try await Upgrader(container: app.container).upgrade(UpgradePlan(chain: [Self.v2, Self.v3]))
        #expect(try PythonSQLite.inspect(app.supportStore("Accounts/1/Notes.sqlite")).rows == 30)
        #expect(Upgrader.storageVersion(of: app.container) == "v3")
    }
}
