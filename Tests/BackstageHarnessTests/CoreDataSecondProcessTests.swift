import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// A Core Data migration while another process (an app extension, a sync agent) holds the store's
/// write lock: the upgrade waits for the lock, then fails by name with nothing changed, and the next
/// run, once the lock is released, completes.
@Suite struct CoreDataSecondProcessTests {
    @Test func aMigrationWaitsForAnotherProcesssWriteLockThenFailsByNameWithNothingChanged() throws {
        let device = try CoreDataStaleCopyTests.device(layout: "Herbarium", state: "clean", inDocuments: true)
        let (scratch, catalog, root, store) = (device.scratch, device.catalog, device.root, device.documents)
        let rows = try CoreDataStaleCopyTests.rows("ZSPECIMEN", in: store, scratch: scratch.url)
        let before = try Data(contentsOf: store)
        let plan = try catalog.chain(from: "Herbarium", to: "Herbarium-2")[0].file.path

        let holder = try PythonSQLite.holdWriteLockWithoutWriting(store, seconds: 60)
        let refused = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan, "--timeout", "0.5"])
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        #expect(refused.status != 0, "\(refused.stdout)\n\(refused.stderr)")
        #expect(refused.stderr.contains("store in use") && refused.stderr.contains(store.lastPathComponent),
                "\(refused.stderr)")
        #expect(try Data(contentsOf: store) == before, "the store is as it was")
        #expect(Upgrader.storageVersion(of: catalog.container(at: root)) == nil)

        let upgraded = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan])
        #expect(upgraded.status == 0, "\(upgraded.stdout)\n\(upgraded.stderr)")
        #expect(try CoreDataStaleCopyTests.modelVersion(of: store, scratch: scratch.url) == ["2"])
        #expect(try CoreDataStaleCopyTests.rows("ZSPECIMEN", in: store, scratch: scratch.url) == rows)
        #expect(Upgrader.storageVersion(of: catalog.container(at: root)) == "Herbarium-2")
    }
}
