import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The Core Data migration program run on copies of real stores of version N: the result must be the
/// store Core Data itself wrote for version N+1 (schema, entities, identifiers, hashes, judged by
/// Python's sqlite3 and plistlib), with every row and value of store N.
@Suite struct CoreDataMigrationTests {
    typealias Model = CoreDataModelTests

    /// What Python sees of a store beyond its schema: every Core Data table's rows, the metadata,
    /// `integrity_check`, and Core Data's invariants (each row's `Z_ENT` is an entity of its table;
    /// each root entity's `Z_MAX` is at least every key of its table).
    static let inspect = """
        import sqlite3, sys, json, plistlib
        c = sqlite3.connect(sys.argv[1])
        out = {"rows": {}, "problems": []}
        out["integrity"] = c.execute("pragma integrity_check").fetchone()[0]
        pk = {r[0]: (r[1], r[2], r[3]) for r in c.execute("select Z_ENT, Z_NAME, Z_SUPER, Z_MAX from Z_PRIMARYKEY")}
        def root(e):
            while pk[e][1]: e = pk[e][1]
            return e
        tables = [r[0] for r in c.execute("select name from sqlite_master where type='table' and name like 'Z%'")]
        for t in tables:
            if t in ("Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"): continue
            cols = [r[1] for r in c.execute("pragma table_info(%s)" % t)]
            rows = [list(r) for r in c.execute("select * from %s order by 1, 2" % t)]
            out["rows"][t] = [dict(zip(cols, r)) for r in rows]
            if "Z_ENT" not in cols: continue
            members = [e for e in pk if "Z" + pk[root(e)][0].upper() == t]
            for (ent,) in c.execute("select distinct Z_ENT from %s" % t):
                if ent not in members: out["problems"].append("%s holds Z_ENT %s" % (t, ent))
            top = c.execute("select max(Z_PK) from %s" % t).fetchone()[0] or 0
            for e in members:
                if pk[e][1] == 0 and (pk[e][2] or 0) < top: out["problems"].append("%s: Z_MAX below a key" % pk[e][0])
        v, uuid, blob = c.execute("select Z_VERSION, Z_UUID, Z_PLIST from Z_METADATA").fetchone()
        plist = plistlib.loads(blob)
        out["metadata"] = {"version": v, "uuid": uuid,
            "identifiers": list(plist.get("NSStoreModelVersionIdentifiers", [])),
            "hashes": {k: h.hex() for k, h in plist.get("NSStoreModelVersionHashes", {}).items()},
            "others": sorted(k for k in plist if k not in ("NSStoreModelVersionIdentifiers", "NSStoreModelVersionHashes"))}
        print(json.dumps(out, sort_keys=True))
        """

    /// One value of a row, as Python's json gives it.
    enum Cell: Decodable, Equatable {
        case int(Int), real(Double), text(String), null
        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Int.self) {
                self = .int(value)
            } else if let value = try? container.decode(Double.self) {
                self = .real(value)
            } else {
                self = .text(try container.decode(String.self))
            }
        }
    }

    struct Inspection: Decodable {
        struct Metadata: Decodable, Equatable {
            var version: Int
            var uuid: String
            var identifiers: [String]
            var hashes: [String: String]
            var others: [String]
        }
        var rows: [String: [[String: Cell]]]
        var problems: [String]
        var integrity: String
        var metadata: Metadata
    }

    static func inspect(_ store: URL) throws -> Inspection {
        let result = try PythonSQLite.run(inspect, [store.path])
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(Inspection.self, from: Data(result.stdout.utf8))
    }

    /// A copy of `project`'s store `name` (with its -wal) beside the test, and a second copy to read.
    static func copyStore(_ project: URL, _ name: String, to scratch: TemporaryDirectory, as copy: String) throws -> URL
    {
        let from = project.appending(path: "stores/\(name)")
        let target = scratch.url.appending(path: copy)
        try shell("cp '\(from.path)' '\(target.path)'")
        if FileManager.default.fileExists(atPath: from.path + "-wal") {
            try shell("cp '\(from.path)-wal' '\(target.path)-wal'")
        }
        return target
    }

    /// The migrated store equals the real store of the destination: schema, Z_PRIMARYKEY's entities,
    /// identifiers and hashes; it passes integrity_check and the invariants; Z_VERSION and Z_UUID
    /// are the source's.
    static func expectSameStore(_ migrated: URL, as truth: URL, source: Inspection) throws -> Inspection {
        let made = try Model.describe(migrated)
        let real = try Model.describe(truth)
        #expect(made.objects == real.objects)
        #expect(made.columns == real.columns)
        #expect(made.indexes == real.indexes)
        #expect(made.primarykey == real.primarykey)
        #expect(made.identifiers == real.identifiers)
        #expect(made.hashed == real.hashed)
        let after = try inspect(migrated)
        let expected = try inspect(truth)
        #expect(after.metadata.hashes == expected.metadata.hashes)
        #expect(after.metadata.identifiers == expected.metadata.identifiers)
        #expect(after.metadata.uuid == source.metadata.uuid)
        #expect(after.metadata.version == source.metadata.version)
        #expect(after.metadata.others == source.metadata.others)
        #expect(after.integrity == "ok")
        #expect(after.problems.isEmpty, "\(after.problems)")
        return after
    }

    static func rows(_ inspection: Inspection, _ table: String) -> [Int: [String: Cell]] {
        var result: [Int: [String: Cell]] = [:]
        for row in inspection.rows[table] ?? [] {
            if case .int(let key)? = row["Z_PK"] { result[key] = row }
        }
        return result
    }

    static let wibosco = "CoreDataMigration_Example.xcdatamodeld"

    @Test func wibosco1To2FollowsTheMappingModelAndKeepsTheRenamedColorValues() throws {
        guard Model.sharedIsThere else { return }
        let scratch = try TemporaryDirectory()
        let project = try Model.copy("wibosco", into: scratch)
        let model = try CoreDataModelReader.read(project.appending(path: Self.wibosco))
        let mapping = try CoreDataMappingModel.read(project.appending(path: "mappings/Migration1to2.xcmappingmodel"))
        #expect(mapping.entityMappings.first?.valueExpressions["hexColor"] == .sourceKeyPath("color"))
        let program = try CoreDataMigrationCompiler.compile(
            from: model.versions[0], to: model.versions[1], mappingModel: mapping)
        #expect(program.unresolved.isEmpty)
        #expect(program.metadata.versionHashesSource == .reproduced)
        #expect(program.rewrites.map(\.table) == ["ZPOST"])
        #expect(program.rewrites.first?.sources == ["ZPOST"])

        let store = try Self.copyStore(
            project, "CoreDataMigration_Example_1.sqlite", to: scratch, as: "migrated.sqlite")
        let before = try Self.inspect(store)
        try program.run(onStoreAt: store.path)
        let truth = try Self.copyStore(project, "CoreDataMigration_Example_2.sqlite", to: scratch, as: "truth.sqlite")
        let after = try Self.expectSameStore(store, as: truth, source: before)

        let old = Self.rows(before, "ZPOST")
        let new = Self.rows(after, "ZPOST")
        #expect(old.count == 1001 && new.count == old.count)
        for (key, row) in old {
            let migrated = try #require(new[key])
            #expect(migrated["ZHEXCOLOR"] == row["ZCOLOR"])
            #expect(migrated["ZDATE"] == row["ZDATE"] && migrated["ZPOSTID"] == row["ZPOSTID"])
            #expect(migrated["Z_OPT"] == row["Z_OPT"] && migrated["Z_ENT"] == row["Z_ENT"])
        }
    }

    @Test func wibosco2To3RefusesTheCustomPolicyThenRunsTheDevelopersSQL() throws {
        guard Model.sharedIsThere else { return }
        let scratch = try TemporaryDirectory()
        let project = try Model.copy("wibosco", into: scratch)
        let model = try CoreDataModelReader.read(project.appending(path: Self.wibosco))
        let mapping = try CoreDataMappingModel.read(project.appending(path: "mappings/Migration2to3.xcmappingmodel"))
        let (v2, v3) = (model.versions[1], model.versions[2])
        #expect {
            try CoreDataMigrationCompiler.compile(from: v2, to: v3, mappingModel: mapping)
        } throws: { error in
            (error as? CoreDataMigrationError)?.reason
                == .needsDeveloperSQL([
                    .init(
                        destinationEntity: "Post", sourceEntity: "Post",
                        policyClass: "CoreDataMigration_Example.Post2ToPost3MigrationPolicy")
                ])
        }
        // What the policy does, in SQL: each post keeps its key and gets a Color of its own holding
        // its hex colour and a new UUID.
        let uuid =
            "upper(substr(hex(u), 1, 8) || '-' || substr(hex(u), 9, 4) || '-' || substr(hex(u), 13, 4) || '-' "
            + "|| substr(hex(u), 17, 4) || '-' || substr(hex(u), 21, 12))"
        let sql = CoreDataMigrationCompiler.CustomSQL(
            destinationEntity: "Post",
            statements: [
                "INSERT INTO ZPOST (Z_PK, Z_ENT, Z_OPT, ZCOLOR, ZDATE, ZPOSTID) SELECT Z_PK, {{entity:Post}}, Z_OPT, "
                    + "Z_PK, ZDATE, ZPOSTID FROM {{source:ZPOST}}",
                "INSERT INTO ZCOLOR (Z_PK, Z_ENT, Z_OPT, ZPOST, ZCOLORID, ZHEX) SELECT Z_PK, {{entity:Color}}, 1, "
                    + "Z_PK, \(uuid), ZHEXCOLOR FROM (SELECT *, randomblob(16) AS u FROM {{source:ZPOST}})",
            ])
        let program = try CoreDataMigrationCompiler.compile(from: v2, to: v3, mappingModel: mapping, customSQL: [sql])
        #expect(program.unresolved.isEmpty)
        #expect(Set(program.rewrites.map(\.table)) == ["ZCOLOR", "ZPOST"])

        let store = try Self.copyStore(
            project, "CoreDataMigration_Example_2.sqlite", to: scratch, as: "migrated.sqlite")
        let before = try Self.inspect(store)
        try program.run(onStoreAt: store.path)
        let truth = try Self.copyStore(project, "CoreDataMigration_Example_3.sqlite", to: scratch, as: "truth.sqlite")
        let after = try Self.expectSameStore(store, as: truth, source: before)

        let old = Self.rows(before, "ZPOST")
        let posts = Self.rows(after, "ZPOST")
        let colors = Self.rows(after, "ZCOLOR")
        #expect(old.count == 5979 && posts.count == old.count && colors.count == old.count)
        for (key, row) in old {
            let post = try #require(posts[key])
            #expect(post["ZDATE"] == row["ZDATE"] && post["ZPOSTID"] == row["ZPOSTID"])
            #expect(post["Z_ENT"] == .int(2))
            guard case .int(let color)? = post["ZCOLOR"] else {
                Issue.record("post \(key) has no colour")
                continue
            }
            #expect(colors[color]?["ZHEX"] == row["ZHEXCOLOR"])
            #expect(colors[color]?["ZPOST"] == .int(key))
        }
    }

    @Test func mwkirk1To2InfersTheNewDepartmentAndRenumbersEmployees() throws {
        guard Model.sharedIsThere else { return }
        let scratch = try TemporaryDirectory()
        let project = try Model.copy("mwkirk", into: scratch)
        let model = try CoreDataModelReader.read(project.appending(path: "MWKCoreDataTests.xcdatamodeld"))
        let program = try CoreDataMigrationCompiler.compile(
            from: model.versions[0], to: model.versions[1], options: .init(writesModelCache: false))
        #expect(program.unresolved.isEmpty)
        #expect(program.sql.contains { $0.contains("Z_ENT") && $0.contains("INSERT INTO ZEMPLOYEE") })

        let store = try Self.copyStore(project, "MWKCoreDataTests.sqlite", to: scratch, as: "migrated.sqlite")
        let before = try Self.inspect(store)
        try program.run(onStoreAt: store.path)
        let truth = try Self.copyStore(project, "MWKCoreDataTests2.sqlite", to: scratch, as: "truth.sqlite")
        let after = try Self.expectSameStore(store, as: truth, source: before)
        let old = Self.rows(before, "ZEMPLOYEE")
        let new = Self.rows(after, "ZEMPLOYEE")
        #expect(old.count == 3 && new.count == 3)
        for (key, row) in old {
            #expect(new[key]?["ZNAME"] == row["ZNAME"])
            #expect(new[key]?["Z_ENT"] == .int(2))  // Dept is entity 1 now
            #expect(new[key]?["ZDEPT"] == .null)
        }
        #expect(after.rows["ZDEPT"]?.isEmpty == true)
    }

    @Test func wibosco3To4AddsHideWithItsDefaultAndMatchesTheWALStore() throws {
        guard Model.sharedIsThere else { return }
        let scratch = try TemporaryDirectory()
        let project = try Model.copy("wibosco", into: scratch)
        let model = try CoreDataModelReader.read(project.appending(path: Self.wibosco))
        let program = try CoreDataMigrationCompiler.compile(from: model.versions[2], to: model.versions[3])
        #expect(program.unresolved.isEmpty)
        #expect(program.keptTables == ["ZCOLOR"])
        let store = try Self.copyStore(
            project, "CoreDataMigration_Example_3.sqlite", to: scratch, as: "migrated.sqlite")
        let before = try Self.inspect(store)
        try program.run(onStoreAt: store.path)
        let truth = try Self.copyStore(project, "CoreDataMigration_Example_WAL.sqlite", to: scratch, as: "truth.sqlite")
        let after = try Self.expectSameStore(store, as: truth, source: before)
        #expect(after.rows["ZCOLOR"] == before.rows["ZCOLOR"])
        let old = Self.rows(before, "ZPOST")
        let new = Self.rows(after, "ZPOST")
        #expect(old.count == 7995 && new.count == old.count)
        for (key, row) in old {
            var expected = row
            expected["ZHIDE"] = .int(0)
            #expect(new[key] == expected)
        }
    }

    @Test func capturedAndCompiledHashesComeBeforeTheReproducedOnes() throws {
        guard Model.sharedIsThere else { return }
        let scratch = try TemporaryDirectory()
        let project = try Model.copy("wibosco", into: scratch)
        let model = try CoreDataModelReader.read(project.appending(path: Self.wibosco))
        let truth = try Self.copyStore(project, "CoreDataMigration_Example_WAL.sqlite", to: scratch, as: "v4.sqlite")
        let captured = try #require(try CoreDataVersionHashes.fromStore(atPath: truth.path))
        let reproduced = try CoreDataMigrationCompiler.compile(from: model.versions[2], to: model.versions[3])
        #expect(reproduced.metadata.versionHashes == captured)
        let fromStore = try CoreDataMigrationCompiler.compile(
            from: model.versions[2], to: model.versions[3], options: .init(capturedStoreHashes: captured))
        #expect(fromStore.metadata.versionHashesSource == .capturedStore)
        let info = scratch.url.appending(path: "VersionInfo.plist")
        let plist: [String: Any] = ["NSManagedObjectModel_VersionHashes": ["CoreDataMigration_Example 4": captured]]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(to: info)
        let compiled = try #require(
            try CoreDataVersionHashes.fromCompiledModel(info, version: "CoreDataMigration_Example 4"))
        let program = try CoreDataMigrationCompiler.compile(
            from: model.versions[2], to: model.versions[3],
            options: .init(compiledModelHashes: compiled, capturedStoreHashes: captured))
        #expect(program.metadata.versionHashesSource == .compiledModel)
        #expect(program.metadata.versionHashes == captured)
    }
}
