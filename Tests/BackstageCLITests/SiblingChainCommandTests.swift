import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Issue 54: a sibling build's chain (v2 → v2.1) over storage a v3 build made said "skipped
/// (absent: fresh install)" and recorded v2.1, and the app trusting it started empty. A chain that
/// does not know the storage present is refused, as an older build is, and writes nothing.
@Suite struct SiblingChainCommandTests {
    static let sibling = """
        {"name": "v2-to-v2.1", "version": "v2.1", "steps": [{"relocate": {"from": "applicationSupport/Workout.sqlite", "to": "applicationSupport/Accounts/Workout.sqlite"}}]}
        """

    @Test func aSiblingChainOverANewerContainerIsRefusedNamingTheVersionFoundAndWritesNothing() throws {
        let builds = try DowngradeGuardCommandTests.Builds(v3: DowngradeGuardCommandTests.split)
        let upgraded = try builds.upgrade([builds.v2, builds.v3])
        #expect(upgraded.status == 0, "\(upgraded.stderr)")
        #expect(Upgrader.storageVersion(of: builds.app.container) == "v3")
        let siblingPlan = builds.app.root.appending(path: "v2.1.json")
        try Data(Self.sibling.utf8).write(to: siblingPlan)
        let chain = UpgradePlan(chain: [try UpgradePlan.load(from: builds.v2), try UpgradePlan.load(from: siblingPlan)])
        #expect(Upgrader.needsUpgrade(builds.app.container, chain), "never \"nothing to do\"")

        let before = treeDigest(builds.app.root)
        for extra in [["--dry-run"], [], ["--json"]] {
            let result = try builds.upgrade([builds.v2, siblingPlan], extra)
            #expect(result.status == 3, "\(extra): \(result.stdout)")
            #expect(
                result.stderr.contains("was upgraded to v3, a version this build does not know (it knows v2, v2.1)"),
                "\(extra): \(result.stderr)")
            #expect(!result.stdout.contains("fresh install"), "\(extra): \(result.stdout)")
            #expect(treeDigest(builds.app.root) == before, "\(extra): nothing written")
        }
        #expect(Upgrader.storageVersion(of: builds.app.container) == "v3")
        // The v3 build's stores are all there, with every workout.
        #expect(
            try PythonSQLite.inspect(builds.app.supportStore("Data.sqlite"), table: "workout", titleColumn: "name").rows
                == 19)
    }

    /// A build's last plans alone (they share no version with the storage) still upgrade it: the
    /// storage is where they start.
    @Test func aNewerBuildsLastPlanAloneStillUpgradesOlderStorage() throws {
        let builds = try DowngradeGuardCommandTests.Builds(v3: DowngradeGuardCommandTests.split)
        #expect(try builds.upgrade([builds.v2]).status == 0)
        let result = try builds.upgrade([builds.v3])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Upgrader.storageVersion(of: builds.app.container) == "v3")
        #expect(
            try PythonSQLite.inspect(builds.app.supportStore("Data.sqlite"), table: "workout", titleColumn: "name").rows
                == 19)
    }
}
