// The example of the DocC article "Testing upgrades in Swift" (TestingUpgradesInSwift.md): the
// code between the markers is the article's, character for character (ArticleExampleTests checks).
// Example begins
import Backstage
import BackstageHarness
import Foundation
import Testing

/// Cookbook's catalog, committed beside the tests: `backstage catalog init`, `add-version` and
/// `add-check` wrote it.
let cookbookCatalog = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appending(path: "Catalogs/Cookbook")

@Suite struct CookbookUpgradeTests {
    let catalog: CatalogFolder
    init() throws { catalog = try CatalogFolder(at: cookbookCatalog) }

    @Test func catalogHasNoProblem() {
        #expect(CatalogCheck.problems(in: catalog) == [])
    }

    /// Every older version, upgraded in process to the newest: the schema of a fresh install,
    /// every data check holding.
    @Test(arguments: ["v1", "v2"])
    func upgradesToTheNewestVersion(from version: String) async throws {
        let root = FileManager.default.temporaryDirectory.appending(path: "cookbook-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let generator = FixtureGenerator(executable: try BackstageExecutable.locate(), catalog: catalog)
        try generator.generate(FixtureSpec(layout: version, size: 400_000, state: .walPending, seed: 7), at: root)
        let container = AppContainer.iOSSandbox(root: root)
        let newest = try #require(catalog.manifest.versions.last).name
        let before = try catalog.dataCheckResultsBefore(upgrading: version, to: newest, in: container)

        let report = try await Upgrader(container: container).upgrade(catalog.chainPlan(from: version, to: newest))

        #expect(report.steps.contains { $0.outcome == .done })
        #expect(try catalog.schemaFailures(of: newest, in: container) == [])
        #expect(try catalog.dataCheckFailures(of: newest, in: container, before: before) == [])
    }

    /// The chain in a child process killed by SIGKILL at step boundaries, rerun, checked.
    @Test func survivesBeingKilled() throws {
        let simulator = Simulator(executable: try BackstageExecutable.locate(), catalog: catalog)
        let runs = try simulator.simulate(from: "v1", to: "v3", sizes: [400_000], states: [.clean, .walPending], crashPoints: .count(3))
        #expect(runs.count == 6)
        for run in runs {
            #expect(run.passed, "\(run.state) killed at \(run.crashPoint?.description ?? "no point"): \(run.failures)")
        }
    }

    /// An older build, knowing up to v2, installed over storage the newest build upgraded.
    @Test func anOlderBuildRefusesNewerStorage() async throws {
        let root = FileManager.default.temporaryDirectory.appending(path: "cookbook-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FixtureGenerator(executable: try BackstageExecutable.locate(), catalog: catalog)
            .generate(FixtureSpec(layout: "v1", size: 200_000, state: .clean, seed: 7), at: root)
        let container = AppContainer.iOSSandbox(root: root)
        try await Upgrader(container: container).upgrade(catalog.chainPlan(from: "v1", to: "v3"))

        let olderBuild = try catalog.chainPlan(from: "v1", to: "v2")
        #expect(Upgrader.needsUpgrade(container, olderBuild))
        let refusal = await #expect(throws: BackstageError.self) {
            try await Upgrader(container: container).upgrade(olderBuild)
        }
        #expect(refusal?.cause == .newerStorage(version: "v3", known: ["v2"]))
    }
}
// Example ends

/// The article shows the example above as it is compiled and run here.
@Suite struct ArticleExampleTests {
    @Test func theArticleShowsTheExampleThatRuns() throws {
        let here = URL(filePath: #filePath)
        let source = try String(contentsOf: here, encoding: .utf8)
        let begins = try #require(source.range(of: "// Example begins\n"))
        let ends = try #require(source.range(of: "// Example ends"))
        let example = String(source[begins.upperBound..<ends.lowerBound])
        let article = try String(contentsOf: here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "Sources/BackstageHarness/BackstageHarness.docc/TestingUpgradesInSwift.md"), encoding: .utf8)
        #expect(article.contains("```swift\n" + example + "```\n"))
        #expect(example.contains("@Suite struct CookbookUpgradeTests"))
    }
}
