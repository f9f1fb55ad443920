import BackstageHarness
import BackstageTestSupport
import Backstage
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
        let refusal = CoreDataMigrationError(
            reason: .needsDeveloperSQL([
                .init(
                    destinationEntity: "Post", sourceEntity: "Post",
                    policyClass: "CoreDataMigration_Example.Post2ToPost3MigrationPolicy")
            ]))
        #expect(
            refusal.description.contains(
                "entity Post (from Post) runs CoreDataMigration_Example.Post2ToPost3MigrationPolicy"))
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

    // MARK: A model of our own

    /// Three versions: Book inherits from Item; 1 → 2 renames Item.title to name (Renaming ID), makes
    /// Shelf.items ordered, adds Author (entities renumbered) and a mandatory Book.edition with a
    /// default; 2 → 3 adds Tag with a many-to-many Book.tags and makes Shelf.name mandatory with a
    /// default.
    static let library: [(name: String, contents: String)] = [
        (
            "Library",
            """
            <entity name="Item">
                <attribute name="title" optional="YES" attributeType="String"/>
                <relationship name="shelf" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Shelf" inverseName="items" inverseEntity="Shelf"/>
            </entity>
            <entity name="Book" parentEntity="Item">
                <attribute name="pages" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
            </entity>
            <entity name="Shelf">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="items" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Item" inverseName="shelf" inverseEntity="Item"/>
            </entity>
            """
        ),
        (
            "Library 2",
            """
            <entity name="Author">
                <attribute name="name" optional="YES" attributeType="String"/>
            </entity>
            <entity name="Item">
                <attribute name="name" optional="YES" attributeType="String" elementID="title"/>
                <relationship name="shelf" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Shelf" inverseName="items" inverseEntity="Shelf"/>
            </entity>
            <entity name="Book" parentEntity="Item">
                <attribute name="edition" attributeType="Integer 16" defaultValueString="1" usesScalarValueType="YES"/>
                <attribute name="pages" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
            </entity>
            <entity name="Shelf">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="items" optional="YES" toMany="YES" ordered="YES" deletionRule="Nullify" destinationEntity="Item" inverseName="shelf" inverseEntity="Item"/>
            </entity>
            """
        ),
        (
            "Library 3",
            """
            <entity name="Author">
                <attribute name="name" optional="YES" attributeType="String"/>
            </entity>
            <entity name="Item">
                <attribute name="name" optional="YES" attributeType="String" elementID="title"/>
                <relationship name="shelf" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Shelf" inverseName="items" inverseEntity="Shelf"/>
            </entity>
            <entity name="Book" parentEntity="Item">
                <attribute name="edition" attributeType="Integer 16" defaultValueString="1" usesScalarValueType="YES"/>
                <attribute name="pages" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
                <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="books" inverseEntity="Tag"/>
            </entity>
            <entity name="Shelf">
                <attribute name="name" attributeType="String" defaultValueString="Unnamed"/>
                <relationship name="items" optional="YES" toMany="YES" ordered="YES" deletionRule="Nullify" destinationEntity="Item" inverseName="shelf" inverseEntity="Item"/>
            </entity>
            <entity name="Tag">
                <attribute name="label" optional="YES" attributeType="String"/>
                <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="tags" inverseEntity="Book"/>
            </entity>
            """
        ),
    ]

    /// The Library bundle; `identifiers: false` leaves its versions without version identifiers, as
    /// many projects do.
    static func writeLibrary(in scratch: TemporaryDirectory, identifiers: Bool = true) throws -> CoreDataModel {
        let bundle = try ModelBundle.write(
            "Library",
            versions: library.enumerated().map { index, version in
                ModelBundle.Version(
                    version.name,
                    contents: ModelBundle.contents(version.contents, identifier: identifiers ? "\(index + 1)" : nil))
            }, in: scratch.url)
        return try CoreDataModelReader.read(bundle)
    }

    /// A store of `version` as LayoutBuilder writes it, with Core Data's bookkeeping rows and `rows`.
    static func generatedStore(
        _ version: CoreDataModelVersion, at url: URL, rows: [String]
    ) throws -> CoreDataStoreLayout {
        let layout = try CoreDataStoreLayout(version)
        try Model.make(layout, at: url)
        let keys = layout.entities.map { "(\($0.id), '\($0.name)', \($0.superID), 0)" }.joined(separator: ", ")
        let script = """
            import sqlite3, sys, plistlib
            c = sqlite3.connect(sys.argv[1])
            c.execute("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES \(keys)")
            plist = plistlib.dumps({"NSStoreModelVersionIdentifiers": \(layout.versionIdentifiers),
                "NSStoreModelVersionHashes": {}, "NSStoreType": "SQLite", "NSPersistenceFrameworkVersion": 1000},
                fmt=plistlib.FMT_BINARY)
            c.execute("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, 'F00D-CAFE', ?)", (plist,))
            for sql in sys.argv[2:]: c.execute(sql)
            for t in [r[0] for r in c.execute("select name from sqlite_master where type='table' and name like 'Z%' and name <> 'Z_PRIMARYKEY'")]:
                if "Z_ENT" in [r[1] for r in c.execute("pragma table_info(%s)" % t)]:
                    c.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT ifnull(max(Z_PK), 0) FROM %s) WHERE 'Z' || upper(Z_NAME) = '%s'" % (t, t))
            c.commit()
            """
        let result = try PythonSQLite.run(script, [url.path] + rows)
        #expect(result.status == 0, "\(result.stderr)")
        return layout
    }

    /// The migrated store against LayoutBuilder's store of the destination version.
    static func expectLayout(
        _ migrated: URL, of version: CoreDataModelVersion, scratch: TemporaryDirectory
    ) throws
        -> Inspection
    {
        let layout = try CoreDataStoreLayout(version)
        let fresh = scratch.url.appending(path: "\(version.name).sqlite")
        try Model.make(layout, at: fresh)
        let made = try Model.describe(migrated)
        let expected = try Model.describe(fresh)
        #expect(made.objects == expected.objects)
        #expect(made.columns == expected.columns)
        #expect(made.indexes == expected.indexes)
        #expect(made.primarykey == layout.entities.map { [.int($0.id), .text($0.name), .int($0.superID)] })
        #expect(made.identifiers == layout.versionIdentifiers)
        let after = try inspect(migrated)
        #expect(after.integrity == "ok")
        #expect(after.problems.isEmpty, "\(after.problems)")
        #expect(after.metadata.uuid == "F00D-CAFE" && after.metadata.version == 1)
        return after
    }

    @Test func anInventedModelsHistoryKeepsEveryRowThroughInheritanceOrderingRenamesAndDefaults() throws {
        let scratch = try TemporaryDirectory()
        let model = try Self.writeLibrary(in: scratch)
        #expect(model.versions.map(\.name) == ["Library", "Library 2", "Library 3"])
        let store = scratch.url.appending(path: "library.sqlite")
        let v1 = try Self.generatedStore(
            model.versions[0], at: store,
            rows: [
                "INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 3, 1, 'Fiction'), (2, 3, 4, NULL)",
                "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZSHELF, ZPAGES, ZTITLE) VALUES (1, 1, 1, 1, NULL, 'Map'), "
                    + "(2, 2, 1, 1, 320, 'Dune'), (3, 2, 2, 1, NULL, 'Emma'), (4, 2, 1, NULL, 100, NULL), "
                    + "(5, 1, 3, 2, NULL, 'Atlas')",
            ])
        #expect(v1.entities.map(\.name) == ["Item", "Book", "Shelf"])
        let before = try Self.inspect(store)

        // 1 → 2: Author comes first now: Item 1 → 2, Book 2 → 3, Shelf 3 → 4.
        let first = try CoreDataMigrationCompiler.compile(from: model.versions[0], to: model.versions[1])
        #expect(first.unresolved == [.missingVersionHashes(entities: ["Book", "Shelf"])])
        #expect(first.metadata.versionHashes == nil)
        #expect(throws: CoreDataMigrationError.self) { try first.run(onStoreAt: store.path) }
        #expect(try Self.inspect(store).rows == before.rows)  // refused: nothing ran
        try first.run(onStoreAt: store.path, missingHashes: .omitForTesting)
        let second = try Self.expectLayout(store, of: model.versions[1], scratch: scratch)
        let items = Self.rows(second, "ZITEM")
        for (key, row) in Self.rows(before, "ZITEM") {
            let item = try #require(items[key])
            #expect(item["ZNAME"] == row["ZTITLE"])
            #expect(item["ZPAGES"] == row["ZPAGES"] && item["ZSHELF"] == row["ZSHELF"] && item["Z_OPT"] == row["Z_OPT"])
            let isBook = row["Z_ENT"] == .int(2)
            #expect(item["Z_ENT"] == .int(isBook ? 3 : 2))
            #expect(item["ZEDITION"] == (isBook ? .int(1) : .null))
        }
        // Shelf 1 holds items 1, 2, 3 in that order, shelf 2 item 5; item 4 is on no shelf.
        #expect([1, 2, 3, 4, 5].map { items[$0]?["Z_FOK_SHELF"] } == [.int(1), .int(2), .int(3), .null, .int(1)])
        #expect(Self.rows(second, "ZSHELF").values.allSatisfy { $0["Z_ENT"] == .int(4) })
        #expect(second.rows["ZAUTHOR"]?.isEmpty == true)

        // 2 → 3: ZITEM stays as it is; Shelf.name's nil becomes its default; Tag and the join table start empty.
        let next = try CoreDataMigrationCompiler.compile(from: model.versions[1], to: model.versions[2])
        #expect(next.keptTables.contains("ZITEM"))
        try next.run(onStoreAt: store.path, missingHashes: .omitForTesting)
        let third = try Self.expectLayout(store, of: model.versions[2], scratch: scratch)
        #expect(third.rows["ZITEM"] == second.rows["ZITEM"])
        let shelves = Self.rows(third, "ZSHELF")
        #expect(shelves[1]?["ZNAME"] == .text("Fiction") && shelves[2]?["ZNAME"] == .text("Unnamed"))
        #expect(shelves[2]?["Z_OPT"] == .int(4))
        #expect(third.rows["ZTAG"]?.isEmpty == true)
        #expect(third.rows.keys.contains { $0.hasPrefix("Z_") && $0.hasSuffix("TAGS") })
    }

    @Test func aToOneBecomingToManyFillsTheJoinTableFromTheKeysAndTheProgramRoundTripsAsJSON() throws {
        let scratch = try TemporaryDirectory()
        let bundle = scratch.url.appending(path: "Notes.xcdatamodeld")
        let versions = [
            """
            <entity name="Folder">
                <attribute name="title" optional="YES" attributeType="String"/>
                <relationship name="notes" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Note" inverseName="folder" inverseEntity="Note"/>
            </entity>
            <entity name="Note">
                <attribute name="body" optional="YES" attributeType="String"/>
                <relationship name="folder" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Folder" inverseName="notes" inverseEntity="Folder"/>
            </entity>
            """,
            """
            <entity name="Folder">
                <attribute name="title" optional="YES" attributeType="String"/>
                <relationship name="notes" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Note" inverseName="folders" inverseEntity="Note"/>
            </entity>
            <entity name="Note">
                <attribute name="body" optional="YES" attributeType="String"/>
                <relationship name="folders" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Folder" inverseName="notes" inverseEntity="Folder" elementID="folder"/>
            </entity>
            """,
        ]
        // Each version's identifier is empty, as Xcode writes it when none is set.
        try ModelBundle.write(
            "Notes",
            versions: versions.enumerated().map {
                ModelBundle.Version($0 == 0 ? "Notes" : "Notes \($0 + 1)", contents: ModelBundle.contents($1, identifier: ""))
            }, in: scratch.url)
        let model = try CoreDataModelReader.read(bundle)
        let store = scratch.url.appending(path: "notes.sqlite")
        _ = try Self.generatedStore(
            model.versions[0], at: store,
            rows: [
                "INSERT INTO ZFOLDER (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (1, 1, 1, 'Inbox'), (2, 1, 1, 'Work')",
                "INSERT INTO ZNOTE (Z_PK, Z_ENT, Z_OPT, ZFOLDER, ZBODY) VALUES (1, 2, 1, 2, 'a'), (2, 2, 1, NULL, 'b'), "
                    + "(3, 2, 5, 1, 'c')",
            ])
        let program = try CoreDataMigrationCompiler.compile(from: model.versions[0], to: model.versions[1])
        // Both entities are plain: their hashes are proven, so nothing is unresolved.
        #expect(program.unresolved.isEmpty)
        let decoded = try JSONDecoder().decode(
            CoreDataMigrationProgram.self, from: JSONEncoder().encode(program))
        #expect(decoded == program)
        try decoded.run(onStoreAt: store.path)
        let after = try Self.expectLayout(store, of: model.versions[1], scratch: scratch)
        // Folder is entity 1, Note 2: the join table of Folder.notes holds (folder, note) pairs.
        let join = try #require(after.rows["Z_1NOTES"])
        let pairs = Set(join.map { row in [row["Z_1FOLDERS"] ?? .null, row["Z_2NOTES"] ?? .null].description })
        // Note 1 was in folder 2, note 3 in folder 1, note 2 in none.
        #expect(pairs == [[Cell.int(2), .int(1)].description, [Cell.int(1), .int(3)].description])
        #expect(Self.rows(after, "ZNOTE").mapValues { $0["ZBODY"] } == [1: .text("a"), 2: .text("b"), 3: .text("c")])
        #expect(Self.rows(after, "ZNOTE")[3]?["Z_OPT"] == .int(5))
        #expect(after.rows["ZNOTE"]?.allSatisfy { $0["ZFOLDER"] == nil } == true)
    }
}
