import Backstage
import Foundation

/// The cases of issue 31's targets: each Backstage case and the baseline it is held to, both as
/// durable as Backstage (what they write is fsynced before the command ends).
extension BenchRunner {
    typealias Name = BenchTarget.Name

    func makeCases(_ data: Prepared, skipping skipped: inout [String]) -> [Case] {
        let backstage = executable.path
        let shm = crossDevice.appending(path: shmFolder).path
        let copyContainer: (URL) throws -> Void = { run in try Self.copy(data.container, to: run.appending(path: "c")) }
        let sqliteRun: (URL) -> String = { $0.appending(path: "c/Documents/Notes.sqlite").path }
        var cases: [Case] = []
        let bytes = data.storeBytes
        cases.append(
            Case(name: Name.relocateRename, kind: .backstage, bytes: bytes, prepare: copyContainer) { run in
                let container = run.appending(path: "c").path
                return (backstage, ["relocate", container, "--store", "Notes.sqlite", "--strategy", "rename"], nil)
            })
        let spaceOnShm = ((try? FileSystem().space(at: crossDevice.path).available) ?? 0) > data.storeBytes * 2
        if spaceOnShm {
            cases.append(
                Case(
                    name: Name.relocateCopy, kind: .backstage, bytes: bytes, baselines: [Name.durableMove],
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
                            "XDG_DATA_HOME": shm + "/data", "XDG_CACHE_HOME": run.appending(path: "cache").path,
                            "TMPDIR": run.appending(path: "tmp").path, "PATH": "/usr/bin:/bin",
                        ]
                    )
                })
            // A move across file systems: the files copied and fsynced, then the source removed and
            // its folder fsynced, as durable as Backstage's move.
            cases.append(
                Case(name: Name.durableMove, kind: .baseline, bytes: bytes, prepare: copyContainer) { run in
                    Self.durableMoveCommand(
                        [sqliteRun(run), run.appending(path: "c/Documents/.Notes_SUPPORT").path], to: shm + "/moved")
                })
        } else {
            skipped.append("copy to /dev/shm at \(BenchReport.size(data.size)): not enough room there")
        }
        if let sqlite3 = which("sqlite3") {
            cases.append(
                Case(
                    name: Name.split, kind: .backstage, bytes: bytes, baselines: [Name.vacuumInto],
                    prepare: { run in
                        try copyContainer(run)
                        try Data(Self.splitPlan.utf8).write(to: run.appending(path: "split.json"))
                    }
                ) { run in
                    let plan = run.appending(path: "split.json").path
                    return (backstage, ["upgrade", run.appending(path: "c").path, "--plan", plan], nil)
                })
            cases.append(
                Case(name: Name.vacuumInto, kind: .baseline, bytes: bytes, prepare: copyContainer) { run in
                    Self.vacuumIntoCommand(sqlite3, sqliteRun(run), into: run.appending(path: "vacuum.sqlite").path)
                })
        }
        cases += archiveCases(data)
        for index in cases.indices { cases[index].inputs = data.inputs }
        return cases
    }

    private func archiveCases(_ data: Prepared) -> [Case] {
        let backstage = executable.path
        let tree = data.documents.appending(path: "Documents").path
        let bytes = data.documentsBytes
        var cases: [Case] = []
        // Baselines as durable as Backstage: the archive fsynced before the command ends.
        func archiving(_ command: String, to archive: String) -> (String, [String], [String: String]?) {
            ("/bin/sh", ["-c", command + " && sync -f \"$1\"", "sh", archive, tree], nil)
        }
        func export(_ name: String, _ baseline: String, _ file: String, _ options: [String] = []) -> Case {
            Case(name: name, kind: .backstage, bytes: bytes, baselines: [baseline]) { run in
                (backstage, ["export", data.documents.path, "-o", run.appending(path: file).path] + options, nil)
            }
        }
        if which("bsdtar") != nil {
            cases.append(export(Name.zip, Name.bsdtarZip, "out.zip", ["--level", "6"]))
            cases.append(
                Case(name: Name.bsdtarZip, kind: .baseline, bytes: bytes) { run in
                    archiving(
                        "bsdtar --format zip --options zip:compression-level=6 -cf \"$1\" -C \"$2\" .",
                        to: run.appending(path: "out.zip").path)
                })
            // Import never creates the container it is given (a typo would make one): it exists.
            let folder: (String) -> (URL) throws -> Void = { name in
                { run in
                    try FileManager.default.createDirectory(
                        at: run.appending(path: name), withIntermediateDirectories: true)
                }
            }
            cases.append(
                Case(
                    name: "import tar.gz", kind: .backstage, bytes: bytes, baselines: ["bsdtar -xf"],
                    prepare: folder("imported")
                ) { run in (backstage, ["import", data.archive.path, run.appending(path: "imported").path], nil) })
            cases.append(
                Case(name: "bsdtar -xf", kind: .baseline, bytes: bytes, prepare: folder("x")) { run in
                    let target = run.appending(path: "x").path
                    return (
                        "/bin/sh",
                        ["-c", "bsdtar -xf \"$1\" -C \"$2\" && sync -f \"$2\"", "sh", data.archive.path, target], nil
                    )
                })
        }
        if which("pigz") != nil, which("tar") != nil {
            cases.append(export(Name.tarGz, Name.pigz, "out.tar.gz"))
            cases.append(
                Case(name: Name.pigz, kind: .baseline, bytes: bytes) { run in
                    archiving("tar -I pigz -cf \"$1\" -C \"$2\" .", to: run.appending(path: "out.tar.gz").path)
                })
        }
        if which("zstd") != nil, which("tar") != nil {
            cases.append(export(Name.tarZst, Name.zstd, "out.tar.zst"))
            cases.append(
                Case(name: Name.zstd, kind: .baseline, bytes: bytes) { run in
                    archiving("tar -I 'zstd -T0' -cf \"$1\" -C \"$2\" .", to: run.appending(path: "out.tar.zst").path)
                })
        }
        return cases
    }

    // MARK: Incompressible files

    /// A Documents tree of `size` bytes of random bytes — photos and videos to a compressor.
    func prepareIncompressible(size: Int64) throws -> (tree: URL, bytes: Int64) {
        let tree = workspace.appending(path: "data-\(size)/incompressible", directoryHint: .isDirectory)
        let documents = tree.appending(path: "Documents", directoryHint: .isDirectory)
        if !FileManager.default.fileExists(atPath: tree.path) {
            try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
            var random = SeededRandom(seed: 11)
            var written: Int64 = 0
            var n = 0
            while written < size {
                // Photos of 1 to 5 MB, and every tenth file a video of 24 MB.
                let count = n % 10 == 9 ? 24 << 20 : (1 << 20) + Int(random.next() % UInt64(4 << 20))
                let file = documents.appending(path: n % 10 == 9 ? "video \(n).mov" : "photo \(n).jpg")
                try Data(random.bytes(Int(min(Int64(count), max(size - written, 4096))))).write(to: file)
                written += Int64(count)
                n += 1
            }
        }
        return (tree, try FileSystem().treeSize(documents.path))
    }

    /// Export zip of the incompressible tree against `cp` + fsync of the same tree: deflate cannot
    /// shrink these files, so the export is a copy at best.
    func incompressibleCases(_ data: (tree: URL, bytes: Int64)) -> [Case] {
        var export = Case(
            name: Name.zipIncompressible, kind: .backstage, bytes: data.bytes, baselines: [Name.copyIncompressible]
        ) { run in
            (self.executable.path, ["export", data.tree.path, "-o", run.appending(path: "out.zip").path], nil)
        }
        var copy = Case(name: Name.copyIncompressible, kind: .baseline, bytes: data.bytes) { run in
            let source = data.tree.appending(path: "Documents").path
            return (
                "/bin/sh",
                [
                    "-c", "cp -r --reflink=never \"$1\" \"$2\" && sync -f \"$2\"", "sh", source,
                    run.appending(path: "copy").path,
                ],
                nil
            )
        }
        export.inputs = [data.tree]
        copy.inputs = [data.tree]
        return [export, copy]
    }

    // MARK: Schema migration

    /// The SQL of the migration step timed: a column added to the notes, filled on every row, and
    /// indexed — work that grows with the store.
    static let migrationSQL =
        "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER NOT NULL DEFAULT 0; UPDATE ZNOTE SET ZPINNED = Z_PK % 2; "
        + "CREATE INDEX ZNOTE_ZPINNED_INDEX ON ZNOTE (ZPINNED)"

    static var migrationPlan: String {
        """
        {"name": "migrate", "steps": [{"migrateSchema": {"store": "documents/Notes.sqlite",
          "migrations": [{"id": "pinned", "sql": "\(migrationSQL)"}]}}]}
        """
    }

    /// The baseline's script: the same SQL in one transaction, every commit fsynced
    /// (`synchronous=FULL`); the shell's close checkpoints the WAL into the store, as Backstage does.
    static func migrationShellScript(_ sql: String) -> String {
        "PRAGMA synchronous=FULL; BEGIN; \(sql); COMMIT;"
    }

    // MARK: Baselines

    typealias Command = (executable: String, arguments: [String], environment: [String: String]?)

    /// A move across file systems as durable as Backstage's: `sources` (a store, its support folder)
    /// copied into `target` and fsynced, then removed and their folder fsynced. The one definition of
    /// the baseline, for this bench and the large store's (``ScalingBench``).
    static func durableMoveCommand(_ sources: [String], to target: String) -> Command {
        let quoted = sources.indices.map { "\"$\($0 + 1)\"" }.joined(separator: " ")
        let folder = "\"$\(sources.count + 1)\""
        return (
            "/bin/sh",
            [
                "-c",
                "mkdir -p \(folder) && cp -r --reflink=never \(quoted) \(folder)/ && sync -f \(folder) "
                    + "&& rm -rf \(quoted) && sync -f \"$(dirname \"$1\")\"",
                "sh",
            ] + sources + [target], nil
        )
    }

    /// `VACUUM INTO` of `store` by the `sqlite3` shell, its output fsynced: a split's baseline.
    static func vacuumIntoCommand(_ sqlite3: String, _ store: String, into output: String) -> Command {
        ("/bin/sh", ["-c", "\"$1\" \"$2\" \"VACUUM INTO '$3'\" && sync -f \"$3\"", "sh", sqlite3, store, output], nil)
    }

    /// The `sqlite3` shell running `sql` on `store` in one transaction with `synchronous=FULL`: a
    /// migration step's baseline. The script is in the command's text (`sql` must have no double
    /// quote, backquote or `$`), so the report shows it.
    static func migrationShellCommand(_ sqlite3: String, _ store: String, sql: String) -> Command {
        ("/bin/sh", ["-c", "\"$1\" \"$2\" \"\(migrationShellScript(sql))\" >/dev/null", "sh", sqlite3, store], nil)
    }

    /// `backstage upgrade` running one migrateSchema step (journal, lock, migration, checkpoint)
    /// against the `sqlite3` shell running the same SQL with `synchronous=FULL`.
    func migrationCases(_ data: Prepared) -> [Case] {
        guard let sqlite3 = which("sqlite3") else { return [] }
        let copyContainer: (URL) throws -> Void = { run in try Self.copy(data.container, to: run.appending(path: "c")) }
        var migrate = Case(
            name: Name.migrate, kind: .backstage, bytes: data.storeBytes, baselines: [Name.migrateShell],
            prepare: { run in
                try copyContainer(run)
                try Data(Self.migrationPlan.utf8).write(to: run.appending(path: "migrate.json"))
            }
        ) { run in
            let plan = run.appending(path: "migrate.json").path
            return (self.executable.path, ["upgrade", run.appending(path: "c").path, "--plan", plan], nil)
        }
        var shell = Case(name: Name.migrateShell, kind: .baseline, bytes: data.storeBytes, prepare: copyContainer) {
            run in
            Self.migrationShellCommand(
                sqlite3, run.appending(path: "c/Documents/Notes.sqlite").path, sql: Self.migrationSQL)
        }
        migrate.inputs = [data.container]
        shell.inputs = [data.container]
        return [migrate, shell]
    }

    // MARK: Schemas

    /// A catalog for each SQL schema file: the file run into an empty WAL store (in the workspace,
    /// never beside the file), then captured with `backstage catalog init`. A schema that cannot be
    /// captured is skipped, with the reason.
    func schemaCatalogs(skipping skipped: inout [String]) throws -> [CatalogFolder] {
        guard !generationSchemas.isEmpty else { return [] }
        guard let sqlite3 = which("sqlite3") else { return [] }
        var catalogs: [CatalogFolder] = []
        for schema in generationSchemas {
            let app = schema.deletingPathExtension().lastPathComponent
            let folder = workspace.appending(path: "schema-\(app)", directoryHint: .isDirectory)
            let catalog = folder.appending(path: "catalog", directoryHint: .isDirectory)
            if !FileManager.default.fileExists(atPath: catalog.path) {
                let documents = folder.appending(path: "root/Documents", directoryHint: .isDirectory)
                try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
                let copy = folder.appending(path: "schema.sql")
                try? FileManager.default.removeItem(at: copy)
                try FileManager.default.copyItem(at: schema, to: copy)
                let store = documents.appending(path: "\(app).sqlite").path
                let created = try ChildProcess.run(
                    URL(filePath: sqlite3), [store, "PRAGMA journal_mode=WAL;", ".read '\(copy.path)'"])
                let captured =
                    created.status == 0
                    ? try ChildProcess.run(
                        executable,
                        [
                            "catalog", "init", catalog.path, "--from", store, "--at", "documents/\(app).sqlite",
                            "--app", app,
                        ])
                    : created
                guard captured.status == 0 else {
                    skipped.append("generation of \(schema.lastPathComponent): \(captured.stderr)")
                    try? FileManager.default.removeItem(at: catalog)
                    continue
                }
            }
            catalogs.append(try CatalogFolder(at: catalog))
        }
        return catalogs
    }
}
