import BackstageTestSupport
import Foundation
import Testing

/// The real model bundles of `../shared/coredata-models/` (copied first), as a user runs them:
/// the catalog from the model, fixtures of every version at 1 MB and 8 MB that keep Core Data's own
/// invariants (judged by Python's sqlite3 against the model's XML), and the model's whole history
/// simulated with crash points and power cuts.
@Suite struct CoreDataSharedModelsTests {
    struct Project: Sendable, CustomStringConvertible {
        var folder: String
        var bundle: String
        /// `catalog init` arguments after `--model BUNDLE`.
        var arguments: [String]
        /// The versions a plan reaches from the first, in order (a later one Core Data cannot infer
        /// has no plan).
        var history: [String]
        var description: String { folder }
    }

    /// What the Post2ToPost3MigrationPolicy of wibosco does, in SQL: each post keeps its key and gets
    /// a Color of its own with its hex colour and a new UUID.
    static let postPolicy = """
        INSERT INTO ZPOST (Z_PK, Z_ENT, Z_OPT, ZCOLOR, ZDATE, ZPOSTID) SELECT Z_PK, {{entity:Post}}, Z_OPT, Z_PK, ZDATE, \
        ZPOSTID FROM {{source:ZPOST}};
        INSERT INTO ZCOLOR (Z_PK, Z_ENT, Z_OPT, ZPOST, ZCOLORID, ZHEX) SELECT Z_PK, {{entity:Color}}, 1, Z_PK, \
        upper(substr(hex(u), 1, 8) || '-' || substr(hex(u), 9, 4) || '-' || substr(hex(u), 13, 4) || '-' || \
        substr(hex(u), 17, 4) || '-' || substr(hex(u), 21, 12)), ZHEXCOLOR FROM (SELECT *, randomblob(16) AS u FROM \
        {{source:ZPOST}})
        """

    static let projects = [
        Project(
            folder: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            arguments: [
                "--store", "documents/Posts.sqlite", "--mapping", "wibosco/mappings/Migration1to2.xcmappingmodel",
                "--mapping", "wibosco/mappings/Migration2to3.xcmappingmodel", "--policy-sql", "Post=post.sql",
            ],
            history: [
                "CoreDataMigration_Example", "CoreDataMigration_Example-2", "CoreDataMigration_Example-3",
                "CoreDataMigration_Example-4",
            ]),
        // Its third version adds mandatory attributes without defaults: no plan reaches it.
        Project(
            folder: "mwkirk", bundle: "MWKCoreDataTests.xcdatamodeld",
            arguments: ["--store", "applicationSupport/Employees.sqlite"],
            history: ["MWKCoreDataTests", "MWKCoreDataTests2"]),
    ]

    /// Core Data's invariants of the store at argv[1], against the model version's `contents` at
    /// argv[2]: each row's `Z_ENT` a concrete entity of its table's hierarchy, `Z_MAX` at or above
    /// every key of its entity, every concrete entity with rows, every to-one key reaching a row of
    /// its destination's hierarchy, each attribute holding what Core Data stores for its type (a
    /// date a number, an Integer 16 or 32 within its width, a mandatory one no NULL) and only in
    /// rows of its entity; and `integrity_check`. Prints the problems found, as JSON.
    static let invariants = """
        import sqlite3, sys, json, xml.etree.ElementTree as ET
        c = sqlite3.connect(sys.argv[1])
        one = lambda sql: c.execute(sql).fetchone()[0]
        problems = []
        if one("pragma integrity_check") != "ok": problems.append("integrity_check")
        rows = {name: (ent, sup, zmax) for ent, name, sup, zmax in c.execute("select Z_ENT, Z_NAME, Z_SUPER, Z_MAX from Z_PRIMARYKEY")}
        names = {ent: name for name, (ent, _, _) in rows.items()}
        model = {e.get("name"): e for e in ET.parse(sys.argv[2]).getroot().iter("entity")}
        if set(model) != set(rows): problems.append("Z_PRIMARYKEY entities %s, model %s" % (sorted(rows), sorted(model)))
        def root(name):
            while rows[name][1]: name = names[rows[name][1]]
            return name
        def family(name):
            return [name] + [f for n, (_, sup, _) in rows.items() if sup == rows[name][0] for f in family(n)]
        concrete = lambda name: [rows[f][0] for f in family(name) if model[f].get("isAbstract") != "YES"]
        table = lambda name: "Z" + root(name).upper()
        for name in model:
            t, ents = table(name), ",".join(map(str, concrete(name)))
            if name == root(name):
                bad = one("select count(*) from %s where Z_ENT not in (%s)" % (t, ents or "-1"))
                if bad: problems.append("%d rows of %s are no concrete entity of its hierarchy" % (bad, t))
            if model[name].get("isAbstract") != "YES":
                ent, _, zmax = rows[name]
                if one("select count(*) from %s where Z_ENT = %d" % (t, ent)) == 0: problems.append("no %s rows" % name)
                if one("select count(*) from %s where Z_ENT = %d and Z_PK > %d" % (t, ent, zmax)):
                    problems.append("keys of %s above Z_MAX" % name)
            mine = ",".join(map(str, [rows[f][0] for f in family(name)]))
            for a in model[name].findall("attribute"):
                if a.get("transient") == "YES" or a.get("derived") == "YES": continue
                column, kind = "Z" + a.get("name").upper(), a.get("attributeType")
                count = lambda where: one("select count(*) from %s where Z_ENT in (%s) and %s" % (t, mine, where))
                if kind == "Date" and count("typeof(%s) not in ('real', 'integer', 'null')" % column):
                    problems.append("%s.%s holds dates that are no number" % (name, a.get("name")))
                if kind == "Date" and count("(%s > 1e11 or %s < -1e11)" % (column, column)):
                    problems.append("%s.%s holds dates no NSDate holds" % (name, a.get("name")))
                if kind == "Boolean" and count("%s not in (0, 1)" % column):
                    problems.append("%s.%s holds Booleans that are not 0 or 1" % (name, a.get("name")))
                if kind == "UUID" and count("(%s is not null and (typeof(%s) != 'blob' or length(%s) != 16))" % (column, column, column)):
                    problems.append("%s.%s holds UUIDs that are not 16 bytes" % (name, a.get("name")))
                width = {"Integer 16": 32767, "Integer 32": 2147483647}.get(kind)
                if width and count("%s not between %d and %d" % (column, -width - 1, width)):
                    problems.append("%s.%s holds integers wider than %s" % (name, a.get("name"), kind))
                if a.get("optional") != "YES" and count("%s is null" % column):
                    problems.append("%s.%s is mandatory and holds NULL" % (name, a.get("name")))
                others = one("select count(*) from %s where Z_ENT not in (%s) and %s is not null" % (t, mine, column))
                if others: problems.append("%s.%s holds values in rows of other entities" % (name, a.get("name")))
            for r in model[name].iter("relationship"):
                if r.get("toMany") == "YES" or r.get("transient") == "YES": continue
                column, target = "Z" + r.get("name").upper(), r.get("destinationEntity")
                dangling = one(("select count(*) from %s where Z_ENT in (%s) and %s is not null and %s not in "
                    "(select Z_PK from %s where Z_ENT in (%s))") % (t, ents or "-1", column, column, table(target),
                    ",".join(map(str, concrete(target))) or "-1"))
                if dangling: problems.append("%d %s.%s reach no %s" % (dangling, name, r.get("name"), target))
                inverse = [i for i in model[target].iter("relationship") if i.get("name") == r.get("inverseName")]
                if inverse and inverse[0].get("toMany") == "YES" and inverse[0].get("ordered") == "YES":
                    fok = "Z_FOK_" + r.get("name").upper()
                    unset = one("select count(*) from %s where Z_ENT in (%s) and ((%s is null) != (%s is null))"
                        % (t, ents or "-1", column, fok))
                    twice = one("select count(*) from (select 1 from %s where %s is not null group by %s, %s having count(*) > 1)"
                        % (t, column, column, fok))
                    if unset or twice:
                        problems.append("%s.%s: %s is not one position per linked row" % (name, r.get("name"), fok))
        print(json.dumps(problems))
        """

    @Test(.timeLimit(.minutes(20)), arguments: projects)
    func aRealModelsFixturesKeepCoreDatasInvariantsAndItsHistorySimulatesGreen(_ project: Project) throws {
        let shared = CoreDataLintCommandTests.shared.appending(path: project.folder)
        guard FileManager.default.fileExists(atPath: shared.path) else {
            print("skipped: no \(shared.path) (the shared Core Data models sit beside the project)")
            return
        }
        let scratch = try TemporaryDirectory()
        let copy = scratch.url.appending(path: project.folder)
        try shell("cp -R '\(shared.path)' '\(copy.path)' && chmod -R u+w '\(copy.path)'")
        try Data(Self.postPolicy.utf8).write(to: scratch.url.appending(path: "post.sql"))
        let made = try runProcess(
            backstageExecutable,
            ["catalog", "init", "App", "--model", "\(project.folder)/\(project.bundle)"] + project.arguments,
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        let bundle = copy.appending(path: project.bundle)
        let versions = try FileManager.default.contentsOfDirectory(atPath: bundle.path)
            .filter { $0.hasSuffix(".xcdatamodel") }.map { String($0.dropLast(".xcdatamodel".count)) }
        #expect(versions.count >= project.history.count)
        for version in versions {
            let name = version.replacingOccurrences(of: " ", with: "-")
            for size in ["1MB", "8MB"] {
                let out = "out-\(name)-\(size)"
                let fixture = try runProcess(
                    backstageExecutable, ["fixture", out, "--catalog", "App", "--layout", name, "--size", size],
                    currentDirectory: scratch.url)
                #expect(fixture.status == 0, "\(version) \(size): \(fixture.stdout) \(fixture.stderr)")
                let stores = (FileManager.default.subpaths(atPath: scratch.url.appending(path: out).path) ?? [])
                    .filter { $0.hasSuffix(".sqlite") }
                #expect(stores.count == 1, "\(version) \(size): \(stores)")
                guard let store = stores.first else { continue }
                let checked = try PythonSQLite.run(
                    Self.invariants,
                    [
                        scratch.url.appending(path: "\(out)/\(store)").path,
                        bundle.appending(path: "\(version).xcdatamodel/contents").path,
                    ])
                #expect(checked.status == 0, "\(checked.stderr)")
                #expect(checked.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(version) \(size)")
            }
        }
        let simulated = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "App", "--from", project.history[0], "--to", project.history.last ?? "",
                "--sizes", "300KB", "--states", "clean,wal-pending", "--crash-points", "3", "--power-loss",
                "--power-cuts", "3", "--json",
            ], currentDirectory: scratch.url)
        #expect(simulated.status == 0, "\(simulated.stdout.suffix(3000)) \(simulated.stderr)")
        let summary = try JSONDecoder().decode(SimulateSummary.self, from: Data(simulated.stdout.utf8))
        #expect(summary.passed && summary.powerLossStates > 0)
        #expect(summary.runs.contains { $0.crashed && $0.crashPoint?.hasPrefix("coreDataMigration") == true })
    }

    /// A model of every scalar type Core Data stores, a mandatory Boolean with its default among
    /// them, and an ordered to-many: the fixture writes what Core Data writes (a Boolean 0 or 1, its
    /// default NO as 0, a UUID of 16 bytes, dates NSDate holds, one position per linked row in the
    /// order column), judged by the invariants above.
    @Test(.timeLimit(.minutes(10)))
    func aFixtureWritesEachAttributeTypeAsCoreDataDoes() throws {
        let loom = """
            <entity name="Weave" representedClassName="Weave" syncable="YES">
            <attribute name="finished" attributeType="Boolean" defaultValueString="NO" usesScalarValueType="YES"/>
            <attribute name="dyed" optional="YES" attributeType="Boolean" usesScalarValueType="YES"/>
            <attribute name="identifier" optional="YES" attributeType="UUID" usesScalarValueType="NO"/>
            <attribute name="startedAt" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
            <attribute name="knots" attributeType="Integer 64" defaultValueString="0" usesScalarValueType="YES"/>
            <attribute name="width" optional="YES" attributeType="Double" usesScalarValueType="YES"/>
            <attribute name="pattern" attributeType="String" defaultValueString="plain"/>
            <relationship name="threads" optional="YES" toMany="YES" ordered="YES" deletionRule="Cascade" destinationEntity="Thread" inverseName="weave" inverseEntity="Thread"/>
            </entity>
            <entity name="Thread" representedClassName="Thread" syncable="YES">
            <attribute name="color" optional="YES" attributeType="String"/>
            <relationship name="weave" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Weave" inverseName="threads" inverseEntity="Weave"/>
            </entity>
            """
        let scratch = try TemporaryDirectory()
        try ModelBundle.write("Loom", versions: ModelBundle.numbered("Loom", [loom]), current: "Loom", in: scratch.url)
        let made = try runProcess(
            backstageExecutable, ["catalog", "init", "Loom", "--model", "Loom.xcdatamodeld", "--store", "documents/Loom.sqlite"],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        for seed in ["1", "2"] {
            let fixture = try runProcess(
                backstageExecutable, ["fixture", "out\(seed)", "--catalog", "Loom", "--size", "1MB", "--seed", seed],
                currentDirectory: scratch.url)
            #expect(fixture.status == 0, "\(fixture.stderr)")
            let checked = try PythonSQLite.run(
                Self.invariants,
                [
                    scratch.url.appending(path: "out\(seed)/Documents/Loom.sqlite").path,
                    scratch.url.appending(path: "Loom.xcdatamodeld/Loom.xcdatamodel/contents").path,
                ])
            #expect(checked.status == 0, "\(checked.stderr)")
            #expect(checked.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "seed \(seed): \(checked.stdout)")
        }
    }

    /// wibosco without the SQL of its custom migration policy: no plan reaches version 3, whose
    /// fixture is made from its own schema. Its interrupted state is then the upgrade out of it (to
    /// 4) killed at its lock, as for a first version; every state of 3 → 4 simulates green (two crash points each).
    @Test(.timeLimit(.minutes(10)))
    func aVersionNoPlanReachesHasAnInterruptedStateToo() throws {
        let shared = CoreDataLintCommandTests.shared.appending(path: "wibosco")
        guard FileManager.default.fileExists(atPath: shared.path) else {
            print("skipped: no \(shared.path) (the shared Core Data models sit beside the project)")
            return
        }
        let scratch = try TemporaryDirectory()
        try shell("cp -R '\(shared.path)' '\(scratch.url.path)/wibosco' && chmod -R u+w '\(scratch.url.path)/wibosco'")
        let made = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "App", "--model", "wibosco/CoreDataMigration_Example.xcdatamodeld", "--store",
                "documents/Posts.sqlite", "--mapping", "wibosco/mappings/Migration1to2.xcmappingmodel", "--mapping",
                "wibosco/mappings/Migration2to3.xcmappingmodel",
            ], currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("CoreDataMigration_Example-3: ") && made.stdout.contains("no plan yet"), "\(made.stdout)")
        // The fixture says it is made from version 3's own schemas, not by the upgrades from 1.
        let fixture = try runProcess(
            backstageExecutable,
            ["fixture", "out", "--catalog", "App", "--layout", "CoreDataMigration_Example-4", "--size", "100KB"],
            currentDirectory: scratch.url)
        #expect(fixture.status == 0, "\(fixture.stderr)")
        #expect(
            fixture.stderr.contains(
                "note: no plan reaches CoreDataMigration_Example-3 yet: its stores are made from its own schemas, "
                    + "then upgraded to CoreDataMigration_Example-4 by the catalog's plans"), "\(fixture.stderr)")
        let simulated = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "App", "--from", "CoreDataMigration_Example-3", "--to",
                "CoreDataMigration_Example-4", "--sizes", "150KB", "--states", "all", "--crash-points", "2", "--json",
            ], currentDirectory: scratch.url)
        #expect(simulated.status == 0, "\(simulated.stdout.suffix(3000)) \(simulated.stderr)")
        let summary = try JSONDecoder().decode(SimulateSummary.self, from: Data(simulated.stdout.utf8))
        #expect(summary.passed && summary.runs.count == 6 * 2, "\(summary.runs.count) runs: \(summary.runs.map { $0.crashPoint ?? "none" })")
    }
}
