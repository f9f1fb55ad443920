import Backstage
import Benchmark
import BenchmarkSupport
import Foundation

/// Three migrations of the v2 store (8 MB), one transaction each, recorded in grdb_migrations:
/// a column added, filled for every note, and indexed.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("migration")
    let master = scratch.url.appending(path: "master")

    Benchmark("MigrateSchema8MB3Migrations", configuration: configuration(setup: {
        _ = try makeFixture(layout: "v2", bytes: 8_000_000, at: master)
    }, teardown: {
        scratch.remove()
    })) { benchmark in
        let plan = UpgradePlan(name: "migrate") {
            UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), [
                .init(id: "add-pinned", sql: "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER NOT NULL DEFAULT 0"),
                .init(id: "pin-every-seventh", sql: "UPDATE ZNOTE SET ZPINNED = (Z_PK % 7 = 0)"),
                .init(id: "index-pinned", sql: "CREATE INDEX ZNOTE_ZPINNED_INDEX ON ZNOTE (ZPINNED)"),
            ])
        }
        let root = try scratch.copy(master, as: "run")
        benchmark.startMeasurement()
        blackHole(try await Upgrader(container: .iOSSandbox(root: root)).upgrade(plan))
        benchmark.stopMeasurement()
    }
}
