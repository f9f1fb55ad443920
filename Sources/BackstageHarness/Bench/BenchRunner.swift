import Backstage
import Foundation

/// Measures migration and export speed against the baselines a developer would compare with,
/// on the same generated data, in one run: each case runs as a child process (so its peak memory
/// is its own), cases are interleaved run by run, and medians are reported. Each case starts
/// after a `sync`, with what it reads dropped from the page cache: no case reads warm what the
/// one before it read cold.
///
/// For each size it builds a v1 container of the sample app (the store in Documents) and a
/// Documents tree of that size, then times: `backstage relocate` by rename and by copy to
/// `/dev/shm`, `cp` + fsync, `mv` across file systems, `sqlite3 .backup` (the backup API), `VACUUM INTO`, the naive row copy
/// (every row read into memory and written to a new store, as `migratePersistentStore` does), a
/// split against `VACUUM INTO`, export zip against `bsdtar`, tar.gz against GNU `tar -I pigz` and
/// tar.zst against `tar -I 'zstd -T0'` (each baseline fsyncs its archive, as Backstage does),
/// import against `bsdtar -xf` + `sync -f`, and `needsUpgrade` in process.
public struct BenchRunner {
    /// The `backstage` executable.
    public var executable: URL
    public var sizes: [Int64]
    public var runs: Int
    /// Where data is generated (a disk file system); `/dev/shm` is the other file system.
    public var workspace: URL
    public var crossDevice = URL(filePath: "/dev/shm")
    public var budget = Upgrader.defaultBudget
    /// Called before each step with what it is and the fraction of the runs done, for progress.
    public var log: (String, Double) -> Void = { _, _ in }
    /// Apps whose fixture generation is timed against the `sqlite3` shell, beside the Notes
    /// sample's: catalogs captured from real stores (`backstage catalog init`).
    public var generationCatalogs: [CatalogFolder] = []

    public init(executable: URL, sizes: [Int64], runs: Int = 3, workspace: URL) {
        self.executable = executable
        self.sizes = sizes
        self.runs = max(1, runs)
        self.workspace = workspace
    }

    /// One timed command: how to prepare its run folder, and what to run.
    struct Case {
        var name: String
        var kind: BenchResult.Kind
        var bytes: Int64
        var baselines: [String] = []
        /// What it may read besides its run folder (its size's data): dropped from the page cache
        /// before it runs, with the run folder.
        var inputs: [URL] = []
        var prepare: (URL) throws -> Void = { _ in }
        var command: (URL) -> (executable: String, arguments: [String], environment: [String: String]?)
    }

    public func run() throws -> BenchReport {
        let fileManager = FileManager.default
        let fileSystem = FileSystem()
        try fileManager.createDirectory(at: workspace, withIntermediateDirectories: true)
        var skipped: [String] = []
        let tools = ["sqlite3", "bsdtar", "zstd", "pigz", "python3", "tar"].filter { which($0) == nil }
        if !tools.isEmpty { skipped.append("missing tools: \(tools.joined(separator: ", "))") }
        var samples: [String: [Double]] = [:]
        var peaks: [String: Int64] = [:]
        var cases: [Case] = []
        let notes = try CatalogFolder.notes()
        for size in sizes {
            log("preparing \(BenchReport.size(size))", 0)
            let prepared = try prepare(size: size)
            cases += makeCases(prepared, skipping: &skipped)
            if which("sqlite3") != nil {
                for (index, catalog) in ([notes] + generationCatalogs).enumerated() {
                    log("preparing generation of \(catalog.manifest.app) at \(BenchReport.size(size))", 0)
                    cases += try generationCases(catalog, bundled: index == 0, size: size)
                }
            }
        }
        for run in 1...runs {
            for (index, item) in cases.enumerated() {
                log(
                    "run \(run)/\(runs): \(item.name) at \(BenchReport.size(item.bytes))",
                    Double((run - 1) * cases.count + index) / Double(runs * cases.count))
                let folder = workspace.appending(path: "run", directoryHint: .isDirectory)
                try? fileManager.removeItem(at: folder)
                try fileManager.createDirectory(at: folder, withIntermediateDirectories: true)
                try item.prepare(folder)
                // Each case starts with nothing of the last one's still to write back: its
                // writeback would slow this one, and on ext4 without a journal, files deleted
                // while their inode blocks are dirty make every file creation scan past them.
                sync()
                // ... and with what it reads out of the page cache, as every other case that reads
                // it: the first case to read an input used to pay for the disk, the next one not.
                // (This machine's kernel pages out what was not used for a minute anyway: a case
                // cannot count on a warm cache.)
                for input in item.inputs + [folder] { try fileSystem.dropFromCache(input.path) }
                let command = item.command(folder)
                let measured = try ChildProcess.measure(
                    URL(filePath: command.executable), command.arguments, environment: command.environment)
                guard measured.status == 0 else {
                    throw BenchError(
                        message:
                            "\(item.name) at \(BenchReport.size(item.bytes)) failed (exit \(measured.status)): \(measured.stderr)"
                    )
                }
                let key = "\(item.name)@\(item.bytes)"
                samples[key, default: []].append(measured.seconds)
                peaks[key] = max(peaks[key] ?? 0, measured.peakBytes)
                try? fileManager.removeItem(at: folder)
                try? fileManager.removeItem(at: crossDevice.appending(path: shmFolder))
            }
        }
        let results = cases.map { item in
            let key = "\(item.name)@\(item.bytes)"
            return BenchResult(
                name: item.name, kind: item.kind, bytes: item.bytes, runs: samples[key] ?? [0],
                peakBytes: peaks[key] ?? 0, baselines: item.baselines)
        }
        let launchCheck = try measureNeedsUpgrade()
        var report = BenchReport(
            date: Date(), machine: Self.machine(), runsPerCase: runs, sizes: sizes, results: results,
            needsUpgradeMicroseconds: launchCheck.steady, budget: budget, skipped: skipped)
        report.needsUpgradeDocumentsChangedMicroseconds = launchCheck.documentsChanged
        return report
    }

    // MARK: Data

    struct Prepared {
        var size: Int64
        /// A v1 container: the store (and its support folder) in Documents.
        var container: URL
        var storeBytes: Int64
        /// A Documents tree of about `size` bytes, and its tar.gz.
        var documents: URL
        var documentsBytes: Int64
        var archive: URL

        /// Everything a case of this size may read.
        var inputs: [URL] { [container, documents, archive] }
    }

    private var shmFolder: String { "backstage-bench-\(getpid())" }

    private func prepare(size: Int64) throws -> Prepared {
        let folder = workspace.appending(path: "data-\(size)", directoryHint: .isDirectory)
        let container = folder.appending(path: "store", directoryHint: .isDirectory)
        if !FileManager.default.fileExists(atPath: container.path) {
            _ = try FixtureGenerator(executable: executable, catalog: try CatalogFolder.notes()).generate(
                FixtureSpec(layout: "v1", size: size, state: .clean, seed: 1), at: container)
        }
        let store = container.appending(path: "Documents/Notes.sqlite").path
        let support = container.appending(path: "Documents/.Notes_SUPPORT").path
        let fileSystem = FileSystem()
        let storeBytes = (try fileSystem.status(store)?.size ?? 0) + (try fileSystem.treeSize(support))
        let documents = folder.appending(path: "tree", directoryHint: .isDirectory)
        if !FileManager.default.fileExists(atPath: documents.path) {
            try Self.writeDocuments(at: documents.appending(path: "Documents"), bytes: size)
        }
        let documentsBytes = try fileSystem.treeSize(documents.path)
        let archive = folder.appending(path: "tree.tar.gz")
        if !FileManager.default.fileExists(atPath: archive.path) {
            let made = try ChildProcess.measure(
                executable, ["export", documents.path, "-o", archive.path], environment: nil)
            guard made.status == 0 else { throw BenchError(message: "exporting the tree failed: \(made.stderr)") }
        }
        return Prepared(
            size: size, container: container, storeBytes: storeBytes, documents: documents,
            documentsBytes: documentsBytes, archive: archive)
    }

    /// Text notes in 40 folders (60 % of the bytes, compressible) and 20 MB media files half
    /// random, half text — what a notes app's Documents looks like to a compressor.
    static func writeDocuments(at folder: URL, bytes: Int64) throws {
        var random = SeededRandom(seed: 7)
        let words = (0..<4000).map { _ in
            String(decoding: random.bytes(Int(random.next() % 8) + 2).map { 97 + $0 % 26 }, as: UTF8.self)
        }
        func text(_ count: Int) -> Data {
            var out = [UInt8]()
            out.reserveCapacity(count + 16)
            while out.count < count {
                out += Array(words[Int(random.next() % UInt64(words.count))].utf8); out.append(32)
            }
            return Data(out.prefix(count))
        }
        var written: Int64 = 0
        var n = 0
        let media = folder.appending(path: "Media", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        while written + (20 << 20) <= bytes * 4 / 10 {
            try (Data(random.bytes(10 << 20)) + text(10 << 20)).write(to: media.appending(path: "clip \(n).bin"))
            written += 20 << 20
            n += 1
        }
        while written < bytes {
            let notes = folder.appending(path: "Notes/\(n % 40)", directoryHint: .isDirectory)
            try FileManager.default.createDirectory(at: notes, withIntermediateDirectories: true)
            let count = 2_000 + Int(random.next() % 58_000)
            try text(count).write(to: notes.appending(path: "note \(n).txt"))
            written += Int64(count)
            n += 1
        }
    }

    // MARK: Cases

    private func makeCases(_ data: Prepared, skipping skipped: inout [String]) -> [Case] {
        let backstage = executable.path
        let store = data.container.appending(path: "Documents/Notes.sqlite").path
        let support = data.container.appending(path: "Documents/.Notes_SUPPORT").path
        let shm = crossDevice.appending(path: shmFolder).path
        let copyContainer: (URL) throws -> Void = { run in try Self.copy(data.container, to: run.appending(path: "c")) }
        let sqliteRun: (URL) -> String = { $0.appending(path: "c/Documents/Notes.sqlite").path }
        var cases: [Case] = []
        let bytes = data.storeBytes

        cases.append(
            Case(
                name: "relocate · rename", kind: .backstage, bytes: bytes, baselines: ["cp + fsync", "naive row copy"],
                prepare: copyContainer
            ) { run in
                (
                    backstage,
                    ["relocate", run.appending(path: "c").path, "--store", "Notes.sqlite", "--strategy", "rename"], nil
                )
            })
        cases.append(
            Case(name: "cp + fsync", kind: .baseline, bytes: bytes) { run in
                (
                    "/bin/sh",
                    [
                        "-c", "mkdir -p \"$3\" && cp -r --reflink=never \"$1\" \"$2\" \"$3\"/ && sync -f \"$3\"", "sh",
                        store, support, run.appending(path: "copy").path,
                    ], nil
                )
            })
        let spaceOnShm = ((try? FileSystem().space(at: crossDevice.path).available) ?? 0) > data.storeBytes * 2
        if spaceOnShm {
            cases.append(
                Case(
                    name: "relocate · copy → /dev/shm", kind: .backstage, bytes: bytes,
                    baselines: [
                        "cp + fsync → /dev/shm", "mv → /dev/shm", "sqlite3 .backup", "naive row copy → /dev/shm",
                    ],
                    prepare: { run in
                        try Self.copy(
                            data.container.appending(path: "Documents"), to: run.appending(path: "docs/Notes"))
                    }
                ) { run in
                    (
                        backstage,
                        [
                            "relocate", "--layout", "xdg", "--app", "Notes", "--store", "Notes.sqlite", "--strategy",
                            "copy",
                        ],
                        [
                            "HOME": run.path, "XDG_DOCUMENTS_DIR": run.appending(path: "docs").path,
                            "XDG_DATA_HOME": shm + "/data",
                            "XDG_CACHE_HOME": run.appending(path: "cache").path,
                            "TMPDIR": run.appending(path: "tmp").path, "PATH": "/usr/bin:/bin",
                        ]
                    )
                })
            cases.append(
                Case(name: "cp + fsync → /dev/shm", kind: .baseline, bytes: bytes) { _ in
                    (
                        "/bin/sh",
                        [
                            "-c", "mkdir -p \"$3\" && cp -r --reflink=never \"$1\" \"$2\" \"$3\"/ && sync -f \"$3\"",
                            "sh", store, support, shm + "/copy",
                        ], nil
                    )
                })
            // A move across file systems also deletes the source: mv copies, then unlinks every file;
            // durable as Backstage's move is, the copies synced and the source's folder too.
            cases.append(
                Case(name: "mv → /dev/shm", kind: .baseline, bytes: bytes, prepare: copyContainer) { run in
                    (
                        "/bin/sh",
                        [
                            "-c",
                            "mkdir -p \"$3\" && mv \"$1\" \"$2\" \"$3\"/ && sync -f \"$3\" && sync -f \"$(dirname \"$1\")\"",
                            "sh", sqliteRun(run),
                            run.appending(path: "c/Documents/.Notes_SUPPORT").path, shm + "/moved",
                        ], nil
                    )
                })
            if let python3 = which("python3") {
                cases.append(
                    Case(name: "naive row copy → /dev/shm", kind: .baseline, bytes: bytes, prepare: copyContainer) {
                        run in
                        Self.naiveMove(
                            python3, store: sqliteRun(run),
                            support: run.appending(path: "c/Documents/.Notes_SUPPORT").path, into: shm + "/naive")
                    })
            }
        } else {
            skipped.append("copy to /dev/shm at \(BenchReport.size(data.size)): not enough room there")
        }
        if let sqlite3 = which("sqlite3") {
            // Made durable as Backstage's copies are: the new store fsynced before the command ends.
            cases.append(
                Case(name: "sqlite3 .backup", kind: .baseline, bytes: bytes, prepare: copyContainer) { run in
                    (
                        "/bin/sh",
                        [
                            "-c", "\"$1\" \"$2\" \".backup '$3'\" && sync -f \"$3\"", "sh", sqlite3, sqliteRun(run),
                            run.appending(path: "backup.sqlite").path,
                        ], nil
                    )
                })
            cases.append(
                Case(name: "VACUUM INTO", kind: .baseline, bytes: bytes, prepare: copyContainer) { run in
                    (
                        "/bin/sh",
                        [
                            "-c", "\"$1\" \"$2\" \"VACUUM INTO '$3'\" && sync -f \"$3\"", "sh", sqlite3, sqliteRun(run),
                            run.appending(path: "vacuum.sqlite").path,
                        ], nil
                    )
                })
            cases.append(
                Case(
                    name: "split", kind: .backstage, bytes: bytes, baselines: ["VACUUM INTO"],
                    prepare: { run in
                        try copyContainer(run)
                        try Data(Self.splitPlan.utf8).write(to: run.appending(path: "split.json"))
                    }
                ) { run in
                    (
                        backstage,
                        ["upgrade", run.appending(path: "c").path, "--plan", run.appending(path: "split.json").path],
                        nil
                    )
                })
        }
        if let python3 = which("python3") {
            cases.append(
                Case(name: "naive row copy", kind: .baseline, bytes: bytes, prepare: copyContainer) { run in
                    Self.naiveMove(
                        python3, store: sqliteRun(run), support: run.appending(path: "c/Documents/.Notes_SUPPORT").path,
                        into: run.appending(path: "naive").path)
                })
        }
        let tree = data.documents.appending(path: "Documents").path
        // Baselines as durable as Backstage: the archive fsynced before the command ends.
        func archiving(_ command: String, to archive: String) -> (String, [String], [String: String]?) {
            ("/bin/sh", ["-c", command + " && sync -f \"$1\"", "sh", archive, tree], nil)
        }
        if which("bsdtar") != nil {
            cases.append(
                Case(
                    name: "export zip (deflate 6)", kind: .backstage, bytes: data.documentsBytes,
                    baselines: ["bsdtar zip (deflate 6)"]
                ) { run in
                    (
                        backstage,
                        ["export", data.documents.path, "-o", run.appending(path: "out.zip").path, "--level", "6"], nil
                    )
                })
            cases.append(
                Case(name: "bsdtar zip (deflate 6)", kind: .baseline, bytes: data.documentsBytes) { run in
                    archiving(
                        "bsdtar --format zip --options zip:compression-level=6 -cf \"$1\" -C \"$2\" .",
                        to: run.appending(path: "out.zip").path)
                })
            // Import never creates the container it is given (a typo would make one): it exists.
            cases.append(
                Case(
                    name: "import tar.gz", kind: .backstage, bytes: data.documentsBytes, baselines: ["bsdtar -xf"],
                    prepare: { run in
                        try FileManager.default.createDirectory(
                            at: run.appending(path: "imported"), withIntermediateDirectories: true)
                    }
                ) { run in
                    (backstage, ["import", data.archive.path, run.appending(path: "imported").path], nil)
                })
            cases.append(
                Case(
                    name: "bsdtar -xf", kind: .baseline, bytes: data.documentsBytes,
                    prepare: { run in
                        try FileManager.default.createDirectory(
                            at: run.appending(path: "x"), withIntermediateDirectories: true)
                    }
                ) { run in
                    (
                        "/bin/sh",
                        [
                            "-c", "bsdtar -xf \"$1\" -C \"$2\" && sync -f \"$2\"", "sh", data.archive.path,
                            run.appending(path: "x").path,
                        ], nil
                    )
                })
        }
        if which("pigz") != nil, which("tar") != nil {
            cases.append(
                Case(name: "export tar.gz", kind: .backstage, bytes: data.documentsBytes, baselines: ["tar -I pigz"]) {
                    run in
                    (backstage, ["export", data.documents.path, "-o", run.appending(path: "out.tar.gz").path], nil)
                })
            cases.append(
                Case(name: "tar -I pigz", kind: .baseline, bytes: data.documentsBytes) { run in
                    archiving("tar -I pigz -cf \"$1\" -C \"$2\" .", to: run.appending(path: "out.tar.gz").path)
                })
        }
        if which("zstd") != nil, which("tar") != nil {
            cases.append(
                Case(
                    name: "export tar.zst", kind: .backstage, bytes: data.documentsBytes,
                    baselines: ["tar -I 'zstd -T0'"]
                ) { run in
                    (backstage, ["export", data.documents.path, "-o", run.appending(path: "out.tar.zst").path], nil)
                })
            cases.append(
                Case(name: "tar -I 'zstd -T0'", kind: .baseline, bytes: data.documentsBytes) { run in
                    archiving("tar -I 'zstd -T0' -cf \"$1\" -C \"$2\" .", to: run.appending(path: "out.tar.zst").path)
                })
        }
        for index in cases.indices { cases[index].inputs = data.inputs }
        return cases
    }

    /// `backstage fixture` making the first version of `catalog` at `size`, against the `sqlite3`
    /// shell inserting as many rows of the same kinds and sizes with `generate_series`
    /// (``SchemaGenerator/shellScript(rows:externalDataFolder:)``), its Core Data external data
    /// written with the shell's `writefile()`. Both time the stores only: the fixture's few
    /// documents are a fraction of a percent.
    /// `bundled`: the Notes sample, which `backstage fixture` finds without `--catalog`.
    private func generationCases(_ catalog: CatalogFolder, bundled: Bool, size: Int64) throws -> [Case] {
        guard let first = catalog.manifest.versions.first else { return [] }
        let app = catalog.manifest.app
        let folder = workspace.appending(path: "data-\(size)/generate-\(app)", directoryHint: .isDirectory)
        let made = folder.appending(path: "fixture")
        if !FileManager.default.fileExists(atPath: made.path) {
            _ = try FixtureGenerator(executable: executable, catalog: catalog).generate(
                FixtureSpec(layout: first.name, size: size, state: .clean, seed: 1), at: made)
        }
        let container = catalog.container(at: made)
        let fileSystem = FileSystem()
        var bytes: Int64 = 0
        var shell = ""
        for (index, store) in first.stores.enumerated() {
            let set = StoreFileSet(main: store.location.url(in: container))
            bytes +=
                (try fileSystem.status(set.main.path)?.size ?? 0) + (try fileSystem.treeSize(set.supportFolder.path))
            let rows = try StoreInspector.rowCounts(of: set)
            let script = folder.appending(path: "store-\(index).sql")
            // Its external data too, with the shell's writefile(), relative to the run's folder.
            let external = ".store-\(index)_SUPPORT/_EXTERNAL_DATA"
            try Data(
                try SchemaGenerator(schema: try catalog.schema(of: store), seed: 1).shellScript(
                    rows: rows, externalDataFolder: external
                ).utf8
            ).write(to: script)
            shell +=
                (shell.isEmpty ? "cd \"$1\" && " : " && ")
                + "mkdir -p '\(external)' && sqlite3 store-\(index).sqlite \".read '\(script.path)'\" >/dev/null"
        }
        let baseline = "sqlite3 shell · \(app)"
        return [
            Case(name: "generate · \(app)", kind: .backstage, bytes: bytes, baselines: [baseline]) { run in
                (
                    executable.path,
                    [
                        "fixture", run.appending(path: "f").path, "--layout", first.name, "--size", "\(size)B",
                        "--state", "clean", "--seed", "1",
                    ]
                        + (bundled ? [] : ["--catalog", catalog.url.path]), nil
                )
            },
            Case(name: baseline, kind: .baseline, bytes: bytes) { run in
                ("/bin/sh", ["-c", shell, "sh", run.path], nil)
            },
        ]
    }

    static let splitPlan = """
        {"name": "split", "steps": [{"split": {"store": "documents/Notes.sqlite",
          "into": [{"store": "applicationSupport/UserData.sqlite", "tables": ["Z_PRIMARYKEY", "Z_METADATA", "ZFOLDER", "ZNOTE", "ZATTACHMENT"]},
                   {"store": "caches/Cache.sqlite", "tables": ["ZTHUMBNAIL"]}], "discard": ["ZLOG"]}}]}
        """

    /// The naive move of a store into `folder`: ``naiveCopy``, then the source deleted, made as
    /// durable as Backstage's move (the copies synced, the source's folder too).
    static func naiveMove(
        _ python3: String, store: String, support: String, into folder: String
    ) -> (String, [String], [String: String]?) {
        (
            "/bin/sh",
            [
                "-c",
                """
                mkdir -p "$4" && "$1" -c "$2" "$3" "$4/Notes.sqlite" "$5" "$4/.Notes_SUPPORT" && rm -rf "$3" "$5" && sync -f "$4" && sync -f "$(dirname "$3")"
                """, "sh", python3, naiveCopy, store, folder, support,
            ], nil
        )
    }

    /// The naive migration: every row of every table read into memory, then written to a new
    /// store in one transaction; the external-data files copied after.
    static let naiveCopy = """
        import sqlite3, sys, shutil
        source, target, support, target_support = sys.argv[1:5]
        src = sqlite3.connect(source)
        tables = src.execute("select name, sql from sqlite_master where type = 'table' and name not like 'sqlite_%'").fetchall()
        indexes = [r[0] for r in src.execute("select sql from sqlite_master where type in ('index', 'trigger') and sql is not null")]
        rows = {name: src.execute(f'select * from "{name}"').fetchall() for name, _ in tables}
        src.close()
        dst = sqlite3.connect(target)
        for name, sql in tables:
            dst.execute(sql)
            if rows[name]:
                marks = ",".join("?" * len(rows[name][0]))
                dst.executemany(f'insert into "{name}" values ({marks})', rows[name])
        for sql in indexes:
            dst.execute(sql)
        dst.commit()
        dst.close()
        shutil.copytree(support, target_support)
        """

    // MARK: needsUpgrade

    /// Median microseconds of `needsUpgrade` for the Notes v1→v4 chain on an up-to-date v4
    /// container, over 50 batches of 1,000 calls after a `sync` and 1,000 calls to warm up: as a run left it (its launch record vouching
    /// for Documents), then after a file was saved in Documents (the folder is listed).
    private func measureNeedsUpgrade() throws -> (steady: Double, documentsChanged: Double) {
        let root = workspace.appending(path: "needs-upgrade", directoryHint: .isDirectory)
        try? FileManager.default.removeItem(at: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let catalog = try CatalogFolder.notes()
        try FixtureGenerator(executable: executable, catalog: catalog).generate(
            FixtureSpec(layout: "v4", size: 1_000_000, state: .clean, seed: 1), at: root)
        let container = catalog.container(at: root)
        let chain = UpgradePlan(chain: try catalog.chain(from: "v1", to: "v4").map(\.plan))
        try Upgrader(container: container).runAndWait(chain, budget: .infinity)
        func measure() throws -> Double {
            guard !Upgrader.needsUpgrade(container, chain) else {
                throw BenchError(message: "needsUpgrade: the v4 container still needs the v1→v4 chain")
            }
            // As every case: nothing left to write back (the upgrade's, the saved file's), which
            // the kernel's flusher would do on a core this loop needs; and 1,000 calls to warm up.
            sync()
            for _ in 0..<1_000 { _ = Upgrader.needsUpgrade(container, chain) }
            var batches: [Double] = []
            for _ in 0..<50 {
                let start = ContinuousClock.now
                for _ in 0..<1_000 { _ = Upgrader.needsUpgrade(container, chain) }
                batches.append((ContinuousClock.now - start).seconds * 1e6 / 1_000)
            }
            return batches.median
        }
        let steady = try measure()
        try Data("saved by the user".utf8).write(to: container.documents.appending(path: "Saved after the upgrade.txt"))
        return (steady, try measure())
    }

    // MARK: Helpers

    static func copy(_ source: URL, to target: URL) throws {
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        let result = try ChildProcess.run(
            URL(filePath: "/bin/cp"), ["-a", "--reflink=never", source.path, target.path])
        guard result.status == 0 else { throw BenchError(message: "cp \(source.path): \(result.stderr)") }
    }

    private func which(_ tool: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].map { $0 + tool }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    static func machine() -> String {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
            .first { $0.hasPrefix("model name") }.map {
                $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            } ?? "unknown CPU"
        let memory = ProcessInfo.processInfo.physicalMemory >> 30
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores (\(cpu)), \(memory) GiB, Linux"
    }
}

/// A benchmark case that could not run.
public struct BenchError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
