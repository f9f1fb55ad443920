import Foundation

extension ScalingBench {
    /// One side of a store operation: how its run folder is prepared, what runs, and (for a
    /// baseline) a check of what it did, made in its run folder before that is removed.
    struct StoreSide {
        var name: String
        var prepare: (URL) throws -> Void
        var command: (URL) -> BenchRunner.Command
        var check: (URL) throws -> String = { _ in "" }
    }

    /// A store operation and the baseline its design target holds it to, if it has one.
    struct StoreOperation {
        var backstage: StoreSide
        var baseline: StoreSide?
    }

    static let sqlite3 = "/usr/bin/sqlite3"

    /// One large store of two plain tables (rows of incompressible blobs: 2 KB inline, 6 KB on
    /// overflow pages), made by the `sqlite3` shell with a recursive CTE and kept in the workspace,
    /// through relocate by rename and by copy, split and a schema migration, each beside the
    /// baseline of `bench --sizes` (``BenchRunner/durableMoveCommand(_:to:)``,
    /// ``BenchRunner/vacuumIntoCommand(_:_:into:)``, ``BenchRunner/migrationShellCommand(_:_:sql:)``):
    /// for each cache, one untimed run of the baseline, then in each run Backstage and its baseline
    /// (first one, then the other, alternately), each on a fresh copy (or hard link, for the
    /// relocations, which never write the store) prepared alike, synced, then read into the page
    /// cache (warm) or every cache dropped (cold).
    func measureStore(
        bytes: Int64, caches: [BenchCache]
    ) throws -> (rows: [ScalingReport.StoreRow], notes: [String]) {
        let folder = workspace.appending(path: "store-\(bytes)", directoryHint: .isDirectory)
        let source = try writeStore(bytes: bytes, in: folder)
        let size = (try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int64) ?? bytes
        let run = folder.appending(path: "run", directoryHint: .isDirectory)
        var notes: [String] = []
        defer {
            try? remove(run)
            try? remove(crossDevice.appending(path: "backstage-scale-\(getpid())"))
        }
        let operations = storeOperations(source: source, size: size, notes: &notes)
        var rows: [ScalingReport.StoreRow] = []
        for cache in caches {
            for operation in operations {
                rows.append(try time(operation, bytes: size, cache: cache, in: run))
            }
        }
        notes.append("relocate · rename has no baseline target: it is held to peak RSS only")
        return (rows, notes)
    }

    /// The store of about `bytes`, written once into `folder` and kept.
    private func writeStore(bytes: Int64, in folder: URL) throws -> URL {
        let source = folder.appending(path: "Big.sqlite")
        let marker = folder.appending(path: "Big.sqlite.complete")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard !FileManager.default.fileExists(atPath: marker.path) else { return source }
        log("writing a store of \(BenchReport.size(bytes))")
        try? FileManager.default.removeItem(at: source)
        let rows = max(1, bytes / 8_300)
        let made = try ChildProcess.run(
            URL(filePath: Self.sqlite3),
            [
                source.path,
                """
                PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
                CREATE TABLE item(id INTEGER PRIMARY KEY, title TEXT, body BLOB);
                CREATE TABLE attachment(id INTEGER PRIMARY KEY, item INTEGER, data BLOB);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                  INSERT INTO item SELECT i, 'item ' || i, randomblob(2000) FROM n;
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                  INSERT INTO attachment SELECT i, i, randomblob(6000) FROM n;
                """,
            ])
        guard made.status == 0 else { throw BenchError(message: "writing \(source.path) failed: \(made.stderr)") }
        try Data().write(to: marker)
        return source
    }

    /// Relocate by rename (no baseline), by copy across file systems (or on the same disk when RAM
    /// is short, which `notes` says), split and migrate, each with its run folder's preparation.
    private func storeOperations(source: URL, size: Int64, notes: inout [String]) -> [StoreOperation] {
        typealias Name = BenchTarget.Name
        let backstage = executable.path
        let store = { (run: URL) in run.appending(path: "c/Documents/Big.sqlite") }
        let linked: (URL) throws -> Void = { run in try Self.link(source, at: store(run)) }
        var operations = [
            StoreOperation(
                backstage: StoreSide(name: Name.relocateRename, prepare: linked) { run in
                    (
                        backstage,
                        ["relocate", run.appending(path: "c").path, "--store", "Big.sqlite", "--strategy", "rename"],
                        nil
                    )
                })
        ]
        if Self.availableMemory() > size + size / 2 + (1 << 30) {
            operations.append(relocateAcrossFileSystems(source: source))
            if let order = Self.freePageReportingOrder() {
                notes.append(
                    "this machine gives the memory it frees back to its host (free page reporting, order \(order)): "
                        + "each copy to /dev/shm waits for the host to give its pages again, and its runs can vary "
                        + "by 2x or more; writing 11 to \(Self.pageReportingOrder) for the run keeps the memory")
            }
        } else {
            notes.append(
                "too little free RAM for a copy to /dev/shm: the store was copied to a folder of the same disk")
            operations.append(relocateOnTheSameDisk(source: source, size: size))
        }
        return operations + upgrades(source: source)
    }

    /// `relocate --strategy copy` to a folder of the same disk, against the durable move of the same file there.
    private func relocateOnTheSameDisk(source: URL, size: Int64) -> StoreOperation {
        let backstage = executable.path
        let store = { (run: URL) in run.appending(path: "c/Documents/Big.sqlite") }
        let linked: (URL) throws -> Void = { run in try Self.link(source, at: store(run)) }
        return StoreOperation(
            backstage: StoreSide(name: "relocate · copy (same disk)", prepare: linked) { run in
                (
                    backstage,
                    ["relocate", run.appending(path: "c").path, "--store", "Big.sqlite", "--strategy", "copy"],
                    nil
                )
            },
            baseline: StoreSide(name: "cp + fsync + rm + fsync (same disk)", prepare: linked) { run in
                BenchRunner.durableMoveCommand([store(run).path], to: run.appending(path: "moved").path)
            } check: { run in
                try Self.checkMoved(size: size, from: store(run), to: run.appending(path: "moved"))
            })
    }

    /// The split and the migration, each on a fresh copy of the store, against `VACUUM INTO` and the shell.
    private func upgrades(source: URL) -> [StoreOperation] {
        typealias Name = BenchTarget.Name
        let backstage = executable.path
        let store = { (run: URL) in run.appending(path: "c/Documents/Big.sqlite") }
        let copied: (URL) throws -> Void = { run in try BenchRunner.copy(source, to: store(run)) }
        var operations: [StoreOperation] = []
        let plan = { (name: String, text: String) -> (URL) throws -> Void in
            { run in
                try copied(run)
                try Data(text.utf8).write(to: run.appending(path: name))
            }
        }
        let upgrade = { (name: String) -> (URL) -> BenchRunner.Command in
            { run in
                (backstage, ["upgrade", run.appending(path: "c").path, "--plan", run.appending(path: name).path], nil)
            }
        }
        operations.append(
            StoreOperation(
                backstage: StoreSide(
                    name: "split", prepare: plan("split.json", Self.splitPlan), command: upgrade("split.json")),
                baseline: StoreSide(name: Name.vacuumInto, prepare: copied) { run in
                    BenchRunner.vacuumIntoCommand(
                        Self.sqlite3, store(run).path, into: run.appending(path: "vacuum.sqlite").path)
                } check: { run in
                    try Self.checkVacuum(run.appending(path: "vacuum.sqlite"), source: source)
                }))
        operations.append(
            StoreOperation(
                backstage: StoreSide(
                    name: "migrate", prepare: plan("migrate.json", Self.migratePlan), command: upgrade("migrate.json")),
                baseline: StoreSide(name: Name.migrateShell, prepare: copied) { run in
                    BenchRunner.migrationShellCommand(Self.sqlite3, store(run).path, sql: Self.migrationSQL)
                } check: { run in
                    try Self.checkMigrated(store(run))
                }))
        return operations
    }

    /// `relocate --strategy copy` from an XDG Documents folder to `crossDevice`, against the
    /// durable move of the same file there.
    private func relocateAcrossFileSystems(source: URL) -> StoreOperation {
        let shm = crossDevice.appending(path: "backstage-scale-\(getpid())", directoryHint: .isDirectory)
        let store = { (run: URL) in run.appending(path: "home/docs/Big/Big.sqlite") }
        let linked: (URL) throws -> Void = { run in try Self.link(source, at: store(run)) }
        let size = (try? FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int64) ?? 0
        let backstage = StoreSide(name: BenchTarget.Name.relocateCopy, prepare: linked) { run in
            let home = run.appending(path: "home", directoryHint: .isDirectory)
            return (
                executable.path,
                ["relocate", "--layout", "xdg", "--app", "Big", "--store", "Big.sqlite", "--strategy", "copy"],
                [
                    "HOME": home.path, "XDG_DOCUMENTS_DIR": home.appending(path: "docs").path,
                    "XDG_DATA_HOME": shm.appending(path: "data").path,
                    "XDG_CACHE_HOME": home.appending(path: "cache").path, "PATH": "/usr/bin:/bin",
                ]
            )
        } check: { _ in
            try? FileManager.default.removeItem(at: shm)
            return ""
        }
        let baseline = StoreSide(name: BenchTarget.Name.durableMove, prepare: linked) { run in
            BenchRunner.durableMoveCommand([store(run).path], to: shm.appending(path: "moved").path)
        } check: { run in
            defer { try? FileManager.default.removeItem(at: shm) }
            return try Self.checkMoved(size: size, from: store(run), to: shm.appending(path: "moved"))
        }
        return StoreOperation(backstage: backstage, baseline: baseline)
    }

    /// Every run of `operation` and its baseline at one cache, interleaved: their medians, peaks and ratios.
    private func time(
        _ operation: StoreOperation, bytes: Int64, cache: BenchCache, in run: URL
    ) throws -> ScalingReport.StoreRow {
        var own: [ChildProcess.Measurement] = []
        var base: [ChildProcess.Measurement] = []
        var did = ""
        if let baseline = operation.baseline {
            // The first run after an idle spell finds memory its host took back from this virtual
            // machine, and pays for every page the host gives again (a cold 10 GB copy to /dev/shm:
            // 15.8 s, then 7.0 s, the store read once between). One run of the baseline, its work
            // checked and its time dropped, leaves the machine as every measured run finds it.
            log("\(baseline.name) · store of \(BenchReport.size(bytes)) · \(cache), warm-up (not timed)")
            _ = try self.time(baseline, cache: cache, in: run)
        }
        for index in 1...max(1, storeRuns) {
            let name = operation.backstage.name
            let which = "store of \(BenchReport.size(bytes)) · \(cache), run \(index) of \(storeRuns)"
            let ownRun = {
                log("\(name) · \(which)")
                own.append(try self.time(operation.backstage, cache: cache, in: run).measured)
            }
            guard let baseline = operation.baseline else {
                try ownRun()
                continue
            }
            let baseRun = {
                log("\(baseline.name) · \(which)")
                let timed = try self.time(baseline, cache: cache, in: run)
                base.append(timed.measured)
                did = timed.did
            }
            // Whichever side runs first in a pair inherits the machine as the one before left it
            // (memory just freed, write-back under way): the order alternates, run by run.
            if index.isMultiple(of: 2) {
                try baseRun()
                try ownRun()
            } else {
                try ownRun()
                try baseRun()
            }
        }
        var row = ScalingReport.StoreRow(
            operation: operation.backstage.name, bytes: bytes, seconds: own.map(\.seconds).median,
            peakBytes: own.map(\.peakBytes).max() ?? 0)
        row.cache = cache
        row.runs = own.count
        if let baseline = operation.baseline {
            let ratios = zip(own, base).map { $0.seconds / $1.seconds }
            row.baseline = baseline.name
            row.baselineCommand = BenchRunner.text(of: baseline.command(run))
            row.baselineSeconds = base.map(\.seconds).median
            row.baselinePeakBytes = base.map(\.peakBytes).max() ?? 0
            row.baselineDid = did
            row.ratio = ratios.median
            row.ratioLow = ratios.min()
            row.ratioHigh = ratios.max()
        }
        return row
    }

    /// One run of one side: its run folder prepared afresh, synced, then warmed or every cache
    /// dropped, the command timed (wall clock, the child's peak RSS) and what it did checked.
    private func time(
        _ side: StoreSide, cache: BenchCache, in run: URL
    ) throws -> (
        measured: ChildProcess.Measurement, did: String
    ) {
        try remove(run)
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        try side.prepare(run)
        try pageCache.settle(cache, reading: [run])
        let command = side.command(run)
        let measured = try measure(
            URL(filePath: command.executable), command.arguments, environment: command.environment,
            what: "\(side.name) of the store")
        let did = try side.check(run)
        try remove(run)
        return (measured, did)
    }

    // MARK: Checks of the baselines' work

    /// The durable move moved the whole store: its copy in `folder` has the store's size, its source is gone.
    static func checkMoved(size: Int64, from source: URL, to folder: URL) throws -> String {
        let moved = folder.appending(path: source.lastPathComponent)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: moved.path)[.size] as? Int64) ?? -1
        guard bytes == size, !FileManager.default.fileExists(atPath: source.path) else {
            throw BenchError(message: "the durable move left \(moved.path) at \(bytes) bytes of \(size), or its source")
        }
        return "moved \(moved.lastPathComponent) (\(bytes) bytes) to \(folder.path), source removed"
    }

    /// `VACUUM INTO` wrote both tables up to the source's last row.
    static func checkVacuum(_ output: URL, source: URL) throws -> String {
        let query = "SELECT (SELECT max(id) FROM item) || ' ' || (SELECT max(id) FROM attachment)"
        let wrote = try sqlite(output, query), expected = try sqlite(source, query)
        guard wrote == expected, !wrote.isEmpty else {
            throw BenchError(message: "VACUUM INTO wrote rows to \(wrote), not \(expected), in \(output.path)")
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int64) ?? 0
        return "\(output.lastPathComponent): \(bytes) bytes, item and attachment to ids \(wrote)"
    }

    /// The shell's migration added the column and built the index, committed in the store.
    static func checkMigrated(_ store: URL) throws -> String {
        let query =
            "SELECT (SELECT count(*) FROM pragma_table_info('item') WHERE name = 'flag') "
            + "|| (SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'item_title')"
        guard try sqlite(store, query) == "11" else {
            throw BenchError(
                message: "the sqlite3 shell's migration left \(store.path) without item.flag or item_title")
        }
        return "item.flag and index item_title in \(store.lastPathComponent)"
    }

    private static func sqlite(_ store: URL, _ query: String) throws -> String {
        let result = try ChildProcess.run(
            URL(filePath: sqlite3), ["-readonly", store.path, query], capturingOutput: true)
        guard result.status == 0 else { throw BenchError(message: "sqlite3 \(store.path): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A hard link of `source` at `target` (its folders made): nothing copied, for an operation
    /// that never writes the store.
    static func link(_ source: URL, at target: URL) throws {
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.linkItem(at: source, to: target)
    }

    // MARK: Plans

    static let splitPlan = """
        {"name": "split", "steps": [{"split": {"store": "documents/Big.sqlite",
          "into": [{"store": "applicationSupport/Items.sqlite", "tables": ["item"]},
                   {"store": "caches/Attachments.sqlite", "tables": ["attachment"]}]}}]}
        """

    /// The migration step's SQL, run by `backstage upgrade` and by the baseline shell alike: a
    /// column added and an index built, in one migration as `bench --sizes` times it.
    static let migrationSQL =
        "ALTER TABLE item ADD COLUMN flag INTEGER NOT NULL DEFAULT 0; CREATE INDEX item_title ON item(title)"

    static var migratePlan: String {
        """
        {"name": "migrate", "steps": [{"migrateSchema": {"store": "documents/Big.sqlite", "migrations": [
          {"id": "flag-by-title", "sql": "\(migrationSQL)"}]}}]}
        """
    }

    /// MemAvailable of /proc/meminfo in bytes, 0 when unknown.
    /// Where Linux says from which block size (a power of two of pages) it reports free memory to
    /// a hypervisor (virtio-balloon's free page reporting).
    package static let pageReportingOrder = "/sys/module/page_reporting/parameters/page_reporting_order"

    /// The order of the free blocks this machine gives back to its host, or nil when it gives none
    /// back (no reporting, or an order above the largest block, 2^10 pages).
    package static func freePageReportingOrder(control: String = pageReportingOrder) -> Int? {
        guard let text = try? String(contentsOfFile: control, encoding: .utf8),
            let order = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), order <= 10
        else { return nil }
        return order
    }

    static func availableMemory() -> Int64 {
        let text = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("MemAvailable:") {
            let number = line.split(separator: " ").dropFirst().first.flatMap { Int64($0) } ?? 0
            return number * 1024
        }
        return 0
    }
}
