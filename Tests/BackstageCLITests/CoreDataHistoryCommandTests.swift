import BackstageTestSupport
import Foundation
import Testing

/// A Core Data app known only by its model bundle: `catalog init --model` writes Core Data's
/// migration between its versions, `simulate` crashes it and cuts its power, `bench` times it
/// beside plain SQL. The Garden model has three versions: Plant with sub-entities Herb and Tree
/// (one table), Bed ↔ Plant (to-many ↔ to-one), Plant ↔ Tag (many-to-many); version 2 renames
/// Plant.height to size and adds Note; version 3 makes Bed.plants ordered.
/// What the tests of Core Data catalogs read of `simulate --json`.
struct SimulateSummary: Decodable {
    struct Run: Decodable {
        var crashPoint: String?
        var crashed: Bool
        var failures: [String]
    }
    var runs: [Run]
    var passed: Bool
    var powerLossStates: Int
    var versionHashesOmitted: [String]?
}

@Suite struct CoreDataHistoryCommandTests {
    static func contents(version: Int, identifiers: Bool = true) -> String {
        let height =
            version >= 2
            ? #"<attribute name="size" optional="YES" attributeType="Double" defaultValueString="0.0" usesScalarValueType="YES" renamingIdentifier="height"/>"#
            : #"<attribute name="height" optional="YES" attributeType="Double" defaultValueString="0.0" usesScalarValueType="YES"/>"#
        let note = """
                <entity name="Note" syncable="YES">
                    <attribute name="text" optional="YES" attributeType="String"/>
                </entity>
            """
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0"\(identifiers ? " userDefinedModelVersionIdentifier=\"\(version)\"" : "")>
                <entity name="Bed" syncable="YES">
                    <attribute name="name" optional="YES" attributeType="String"/>
                    <relationship name="plants" optional="YES" toMany="YES" \(version >= 3 ? #"ordered="YES" "# : "")deletionRule="Nullify" destinationEntity="Plant" inverseName="bed" inverseEntity="Plant"/>
                </entity>
                <entity name="Herb" parentEntity="Plant" syncable="YES">
                    <attribute name="scent" optional="YES" attributeType="String"/>
                </entity>
            \(version >= 2 ? note : "")
                <entity name="Plant" syncable="YES">
                    \(height)
                    <attribute name="name" optional="YES" attributeType="String"/>
                    <relationship name="bed" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Bed" inverseName="plants" inverseEntity="Bed"/>
                    <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="plants" inverseEntity="Tag"/>
                </entity>
                <entity name="Tag" syncable="YES">
                    <attribute name="label" optional="YES" attributeType="String"/>
                    <relationship name="plants" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Plant" inverseName="tags" inverseEntity="Plant"/>
                </entity>
                <entity name="Tree" parentEntity="Plant" syncable="YES">
                    <attribute name="trunk" optional="YES" attributeType="Integer 32" defaultValueString="0" usesScalarValueType="YES"/>
                </entity>
            </model>
            """
    }

    static let versions = ["Garden", "Garden 2", "Garden 3"]

    /// The bundle, and beside it `Garden.momd/VersionInfo.plist` with a version hash per entity;
    /// `identifiers: false` leaves the versions without version identifiers, as many projects do.
    static func writeBundle(in folder: URL, identifiers: Bool = true) throws {
        try ModelBundle.write(
            "Garden",
            versions: versions.enumerated().map {
                ModelBundle.Version($1, contents: contents(version: $0 + 1, identifiers: identifiers))
            }, in: folder)
        try ModelBundle.writeCompiledModel(
            "Garden",
            entities: versions.enumerated().map { ($1, ["Bed", "Herb", "Plant", "Tag", "Tree"] + ($0 >= 1 ? ["Note"] : [])) },
            in: folder)
    }

    static func initialize(in scratch: URL, momd: Bool) throws -> ProcessResult {
        try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Garden", "--model", "Garden.xcdatamodeld", "--store",
                "applicationSupport/Garden.sqlite",
            ]
                + (momd ? ["--momd", "Garden.momd"] : []),
            currentDirectory: scratch)
    }

    @Test(.timeLimit(.minutes(20)))
    func aModelsWholeHistorySimulatesGreenWithCrashesAndPowerCutsAndBenchesBesidePlainSQL() throws {
        let scratch = try TemporaryDirectory()
        try Self.writeBundle(in: scratch.url)
        let made = try Self.initialize(in: scratch.url, momd: true)
        #expect(made.status == 0, "\(made.stderr)")
        // A plan between each pair of versions, whose one step is Core Data's migration.
        for (from, to) in [("Garden", "Garden-2"), ("Garden-2", "Garden-3")] {
            let plan = try String(
                contentsOf: scratch.url.appending(path: "Garden/plans/\(from)-to-\(to).json"), encoding: .utf8)
            #expect(plan.contains("\"coreDataMigration\""))
        }
        #expect(made.stdout.contains("version hashes from the compiled model"), "\(made.stdout)")
        let check = try runProcess(backstageExecutable, ["catalog", "check", "Garden"], currentDirectory: scratch.url)
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("no problem found"), "\(check.stdout)")

        let fixture = try runProcess(
            backstageExecutable, ["fixture", "out", "--catalog", "Garden", "--layout", "Garden", "--size", "1MB"],
            currentDirectory: scratch.url)
        #expect(fixture.status == 0, "\(fixture.stdout) \(fixture.stderr)")

        let simulated = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "Garden", "--from", "Garden", "--to", "Garden-3", "--sizes", "1MB",
                "--states", "clean", "--crash-points", "4", "--power-loss", "--power-cuts", "4", "--json",
            ], currentDirectory: scratch.url)
        #expect(simulated.status == 0, "\(simulated.stdout.suffix(3000)) \(simulated.stderr)")
        let summary = try JSONDecoder().decode(SimulateSummary.self, from: Data(simulated.stdout.utf8))
        #expect(summary.passed)
        #expect(summary.versionHashesOmitted == nil)
        #expect(summary.powerLossStates > 0)
        // Killed inside Core Data's migration, and the rerun left the store of version 3.
        #expect(summary.runs.contains { $0.crashed && $0.crashPoint?.hasPrefix("coreDataMigration") == true })

        let bench = try runProcess(
            backstageExecutable,
            ["bench", "--catalog", "Garden", "--sizes", "300KB", "--runs", "1", "--allow-debug"],
            currentDirectory: scratch.url)
        #expect(bench.status == 0 || bench.status == 1, "\(bench.stdout) \(bench.stderr)")
        let lines = bench.stdout.split(separator: "\n").filter { $0.contains("beside plain SQL") }
        #expect(lines.count == 2, "\(bench.stdout)")
        #expect(lines.allSatisfy { $0.contains("plain SQL (GRDB") && $0.contains("ratio") }, "\(bench.stdout)")
        // A debug build's ratio is listed, never called met or missed.
        #expect(
            lines.allSatisfy { !$0.contains(" debug") || ($0.contains("not judged") && !$0.contains("missed")) },
            "\(bench.stdout)")
    }

    /// A crash test whose crash never happens tests nothing: two model versions Core Data stores
    /// alike, whose migration has nothing to do, fail every crash point by name instead of "ok".
    @Test(.timeLimit(.minutes(10)))
    func aCrashPointThatNeverFiresFailsItsRunByName() throws {
        let scratch = try TemporaryDirectory()
        let note = #"<entity name="Note"><attribute name="title" optional="YES" attributeType="String"/></entity>"#
        try ModelBundle.write("Same", versions: ModelBundle.numbered("Same", [note, note], identifiers: false), in: scratch.url)
        let made = try runProcess(
            backstageExecutable,
            ["catalog", "init", "Same", "--model", "Same.xcdatamodeld", "--store", "applicationSupport/Same.sqlite"],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        let simulated = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "Same", "--from", "Same", "--to", "Same-2", "--sizes", "100KB", "--states",
                "clean", "--crash-points", "all", "--json",
            ], currentDirectory: scratch.url)
        #expect(simulated.status == 1, "\(simulated.stdout.suffix(2000)) \(simulated.stderr)")
        let summary = try JSONDecoder().decode(SimulateSummary.self, from: Data(simulated.stdout.utf8))
        #expect(!summary.passed && !summary.runs.isEmpty)
        for run in summary.runs {
            #expect(!run.crashed)
            #expect(run.failures.contains { $0.hasPrefix("crash point \(run.crashPoint ?? "") never fired") }, "\(run.failures)")
        }
    }

    /// An app that kept its store in Documents: the newest version keeps it in Application Support,
    /// its plan relocates it, migrates it there and quarantines what a deleted store left in
    /// Documents; every state of the old app, killed and cut, ends green. Kept in Documents on
    /// request, the same history fails simulate, naming the store the user sees.
    @Test(.timeLimit(.minutes(20)))
    func aStoreInDocumentsLeavesItInTheNewestVersionAndTheHistorySimulatesGreen() throws {
        let scratch = try TemporaryDirectory()
        try Self.writeBundle(in: scratch.url)
        let made = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Garden", "--model", "Garden.xcdatamodeld", "--store", "documents/Garden.sqlite",
                "--momd", "Garden.momd",
            ], currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        func steps(_ plan: String, in catalog: String = "Garden") throws -> [[String]] {
            let json = try JSONSerialization.jsonObject(
                with: Data(contentsOf: scratch.url.appending(path: "\(catalog)/plans/\(plan).json")))
            return ((json as? [String: Any])?["steps"] as? [[String: Any]] ?? []).map { $0.keys.sorted() }
        }
        // Garden 2 still keeps it in Documents (shipped so); Garden 3 is the release that moves it.
        #expect(try steps("Garden-to-Garden-2") == [["coreDataMigration"]])
        #expect(try steps("Garden-2-to-Garden-3") == [["relocate"], ["coreDataMigration"], ["quarantine"]])
        let simulated = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "Garden", "--from", "Garden", "--to", "Garden-3", "--sizes", "300KB",
                "--states", "clean,orphan-sidecars,wal-pending", "--crash-points", "4", "--power-loss", "--power-cuts",
                "3", "--json",
            ], currentDirectory: scratch.url)
        #expect(simulated.status == 0, "\(simulated.stdout.suffix(3000)) \(simulated.stderr)")
        let summary = try JSONDecoder().decode(SimulateSummary.self, from: Data(simulated.stdout.utf8))
        #expect(summary.passed)
        #expect(summary.runs.contains { $0.crashed && $0.crashPoint?.hasPrefix("relocate") == true })

        let kept = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Visible", "--model", "Garden.xcdatamodeld", "--store", "documents/Garden.sqlite",
                "--newest-store", "documents/Garden.sqlite", "--momd", "Garden.momd",
            ], currentDirectory: scratch.url)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(try steps("Garden-2-to-Garden-3", in: "Visible") == [["coreDataMigration"]])
        let visible = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "Visible", "--from", "Garden-2", "--to", "Garden-3", "--sizes", "300KB",
                "--states", "clean", "--crash-points", "none",
            ], currentDirectory: scratch.url)
        #expect(visible.status == 1, "\(visible.stdout) \(visible.stderr)")
        #expect(visible.stdout.contains("internal files left in Documents: Garden.sqlite"), "\(visible.stdout)")
    }

    @Test(.timeLimit(.minutes(10)))
    func aCatalogWithoutVersionHashesIsRefusedBySimulateUnlessTheyAreOmittedOnRequest() throws {
        let scratch = try TemporaryDirectory()
        // No version identifiers either: the stores of the three versions have the same metadata, and
        // only their schemas tell them apart (simulate fails a chain that leaves a store of Garden 2).
        try Self.writeBundle(in: scratch.url, identifiers: false)
        let made = try Self.initialize(in: scratch.url, momd: false)
        #expect(made.status == 0, "\(made.stderr)")
        // Plant has sub-entities: its hash is not reproduced, and the catalog says so.
        #expect(made.stderr.contains("are not known"), "\(made.stderr)")
        #expect(made.stdout.contains("UNRESOLVED"), "\(made.stdout)")
        let arguments = [
            "simulate", "--catalog", "Garden", "--from", "Garden", "--to", "Garden-3", "--sizes", "300KB",
            "--states", "clean", "--crash-points", "2",
        ]
        let refused = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--omit-missing-hashes"), "\(refused.stderr)")
        #expect(refused.stderr.contains("Garden-2"), "\(refused.stderr)")
        let omitted = try runProcess(
            backstageExecutable, arguments + ["--omit-missing-hashes"], currentDirectory: scratch.url)
        #expect(omitted.status == 0, "\(omitted.stdout) \(omitted.stderr)")
        #expect(
            omitted.stdout.contains("version hashes omitted (--omit-missing-hashes): Garden-2"), "\(omitted.stdout)")
        // The catalog itself still refuses its plans.
        let plan = try String(
            contentsOf: scratch.url.appending(path: "Garden/plans/Garden-to-Garden-2.json"), encoding: .utf8)
        #expect(!plan.contains("omitForTesting"))

        // A bench times every step's work; a step with nothing to do (the last plan's migration given
        // twice) is said to be skipped, with why, never shown as a time of its work.
        let last = scratch.url.appending(path: "Garden/plans/Garden-2-to-Garden-3.json")
        var doubled = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: last)) as? [String: Any])
        let steps = try #require(doubled["steps"] as? [Any])
        doubled["steps"] = steps + steps
        try JSONSerialization.data(withJSONObject: doubled).write(to: last)
        let bench = try runProcess(
            backstageExecutable,
            [
                "bench", "--catalog", "Garden", "--sizes", "300KB", "--runs", "1", "--allow-debug",
                "--omit-missing-hashes",
            ], currentDirectory: scratch.url)
        #expect(bench.status == 0 || bench.status == 1, "\(bench.stdout) \(bench.stderr)")
        let skipped = bench.stdout.split(separator: "\n").filter { $0.contains("skipped, nothing measured") }
        #expect(skipped.count == 1, "\(bench.stdout)")
        #expect(skipped.first?.contains("up to date: its schema is Garden 3's") == true, "\(bench.stdout)")
        let baselines = bench.stdout.split(separator: "\n").filter { $0.contains("beside plain SQL") }
        #expect(baselines.count == 2, "only the two steps that ran are beside plain SQL: \(bench.stdout)")
    }

    /// A migration that keeps every row but not its links (a to-one's key, a many-to-many's join
    /// rows), or its values, or that never reaches the last version, fails simulate, named: entity,
    /// relationship or attribute, never a value.
    @Test(.timeLimit(.minutes(10)))
    func simulateFailsAMigrationThatLosesLinksValuesOrTheDestinationsSchema() throws {
        let scratch = try TemporaryDirectory()
        try Self.writeBundle(in: scratch.url)
        #expect(try Self.initialize(in: scratch.url, momd: true).status == 0)
        let first = scratch.url.appending(path: "Garden/plans/Garden-to-Garden-2.json")
        let last = scratch.url.appending(path: "Garden/plans/Garden-2-to-Garden-3.json")
        let pristine = (try Data(contentsOf: first), try Data(contentsOf: last))
        /// Inserts `sql` before the metadata is written, in the first plan's program.
        func tamper(_ sql: String) throws {
            var plan = try #require(try JSONSerialization.jsonObject(with: pristine.0) as? [String: Any])
            var steps = try #require(plan["steps"] as? [[String: Any]])
            var step = try #require(steps[0]["coreDataMigration"] as? [String: Any])
            var program = try #require(step["program"] as? [String: Any])
            var statements = try #require(program["statements"] as? [Any])
            statements.insert(["sql": ["_0": sql]], at: statements.count - 1)
            program["statements"] = statements
            step["program"] = program
            steps[0]["coreDataMigration"] = step
            plan["steps"] = steps
            try JSONSerialization.data(withJSONObject: plan).write(to: first)
        }
        let arguments = [
            "simulate", "--catalog", "Garden", "--from", "Garden", "--to", "Garden-3", "--sizes", "300KB",
            "--states", "clean", "--crash-points", "none",
        ]
        // The join table of Plant ↔ Tag in version 2 (`Z_<n>TAGS`, n Plant's entity number there).
        let program = String(decoding: pristine.0, as: UTF8.self)
        let join = try #require(program.firstMatch(of: #/CREATE TABLE (Z_[0-9]+TAGS) /#)?.1)
        for (sql, expected) in [
            ("UPDATE ZPLANT SET ZBED = NULL WHERE Z_PK % 3 = 0", "values changed: Herb.bed (column ZBED before the upgrade)"),
            ("UPDATE ZPLANT SET ZNAME = 'x' || ZNAME", "values changed: Herb.name"),
            ("DELETE FROM \(join) WHERE rowid IN (SELECT rowid FROM \(join) LIMIT 3)", "links changed: "),
        ] {
            try tamper(sql)
            let run = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
            #expect(run.status != 0, "\(sql): \(run.stdout)")
            #expect(run.stdout.contains(expected), "\(sql): \(run.stdout)")
        }
        // The last plan's migration left out: the store stays of Garden 2, whatever its rows.
        try pristine.0.write(to: first)
        var plan = try #require(try JSONSerialization.jsonObject(with: pristine.1) as? [String: Any])
        plan["steps"] = [Any]()
        try JSONSerialization.data(withJSONObject: plan).write(to: last)
        let skipped = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
        #expect(skipped.status != 0, "\(skipped.stdout)")
        #expect(skipped.stdout.contains("is not the store of Garden 3 after the upgrade"), "\(skipped.stdout)")
        #expect(skipped.stdout.contains("Z_FOK_BED"), "the ordered relationship's column is named: \(skipped.stdout)")
    }

    /// Kiln 2 makes Pot.glaze (optional) mandatory with a default and Pot.firing (to-one) to-many,
    /// a many-to-many with Firing.pots. The migration's NULL glazes become the default, which is no
    /// change of value; the links move from Pot's key column into the join table, and a link lost
    /// there is one.
    @Test(.timeLimit(.minutes(10)))
    func aDefaultForNullsIsKeptValuesAndAToOneMadeToManyKeepsItsLinks() throws {
        let pot = """
            <entity name="Pot" representedClassName="Pot" syncable="YES">
            <attribute name="name" attributeType="String"/>
            <attribute name="glaze" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>
            <relationship name="firing" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Firing" inverseName="pots" inverseEntity="Firing"/>
            </entity>
            <entity name="Firing" representedClassName="Firing" syncable="YES">
            <attribute name="cone" attributeType="Integer 16" defaultValueString="6" usesScalarValueType="YES"/>
            <relationship name="pots" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Pot" inverseName="firing" inverseEntity="Pot"/>
            </entity>
            """
        let pot2 = pot.replacingOccurrences(
            of: #"<attribute name="glaze" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>"#,
            with: #"<attribute name="glaze" attributeType="Integer 16" defaultValueString="3" usesScalarValueType="YES"/>"#
        ).replacingOccurrences(
            of: #"<relationship name="firing" optional="YES" maxCount="1""#, with: #"<relationship name="firing" optional="YES" toMany="YES""#)
        let scratch = try TemporaryDirectory()
        try ModelBundle.write("Kiln", versions: ModelBundle.numbered("Kiln", [pot, pot2]), current: "Kiln 2", in: scratch.url)
        let made = try runProcess(
            backstageExecutable, ["catalog", "init", "Kiln", "--model", "Kiln.xcdatamodeld", "--store", "documents/Kiln.sqlite"],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        let arguments = [
            "simulate", "--catalog", "Kiln", "--from", "Kiln", "--to", "Kiln-2", "--sizes", "200KB", "--states", "clean",
            "--crash-points", "none",
        ]
        let green = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
        #expect(green.status == 0, "\(green.stdout)")

        // The join table loses three links before the metadata is written.
        let file = scratch.url.appending(path: "Kiln/plans/Kiln-to-Kiln-2.json")
        let text = String(decoding: try Data(contentsOf: file), as: UTF8.self)
        let join = try #require(text.firstMatch(of: #/CREATE TABLE (Z_[0-9]+POTS) /#)?.1)
        var plan = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        var steps = try #require(plan["steps"] as? [[String: Any]])
        let index = try #require(steps.firstIndex { $0["coreDataMigration"] != nil })
        var step = try #require(steps[index]["coreDataMigration"] as? [String: Any])
        var program = try #require(step["program"] as? [String: Any])
        var statements = try #require(program["statements"] as? [Any])
        statements.insert(
            ["sql": ["_0": "DELETE FROM \(join) WHERE rowid IN (SELECT rowid FROM \(join) LIMIT 3)"]],
            at: statements.count - 1)
        program["statements"] = statements
        step["program"] = program
        steps[index]["coreDataMigration"] = step
        plan["steps"] = steps
        try JSONSerialization.data(withJSONObject: plan).write(to: file)
        let lossy = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
        #expect(lossy.status != 0, "\(lossy.stdout)")
        #expect(lossy.stdout.contains("links changed: Pot.firing (column ZFIRING of ZPOT before the upgrade)"), "\(lossy.stdout)")
    }
}
