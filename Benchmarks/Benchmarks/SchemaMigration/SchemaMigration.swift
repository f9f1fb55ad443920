import Backstage
import Benchmark
import BenchmarkSupport

/// Three migrations of the v2 store (8 MB), one transaction each, recorded in grdb_migrations:
/// a column added, filled for every note, and indexed.
let benchmarks: @Sendable () -> Void = {
    upgradeBenchmark("MigrateSchema8MB3Migrations", layout: "v2", plan: UpgradePlan(name: "migrate") {
        UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), [
            .init(id: "add-pinned", sql: "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER NOT NULL DEFAULT 0"),
            .init(id: "pin-every-seventh", sql: "UPDATE ZNOTE SET ZPINNED = (Z_PK % 7 = 0)"),
            .init(id: "index-pinned", sql: "CREATE INDEX ZNOTE_ZPINNED_INDEX ON ZNOTE (ZPINNED)"),
        ])
    })
}
