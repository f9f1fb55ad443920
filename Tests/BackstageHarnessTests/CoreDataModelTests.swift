import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The model reader and the store Core Data writes for each model version, judged against the
/// stores Core Data itself wrote from the same models (`../shared/coredata-models/`, copied first).
@Suite struct CoreDataModelTests {
    /// `../shared/coredata-models` beside the project (found as ``SharedStores`` finds its stores).
    static let models = SharedStores.folder.deletingLastPathComponent().appending(path: "coredata-models")
    static var sharedIsThere: Bool { FileManager.default.fileExists(atPath: models.path) }

    /// A copy of one project's folder (bundle and stores) in the test's own folder.
    static func copy(_ project: String, into scratch: TemporaryDirectory) throws -> URL {
        let target = scratch.url.appending(path: project)
        try shell("cp -R '\(models.appending(path: project).path)' '\(target.path)' && chmod -R u+w '\(target.path)'")
        return target
    }

    /// ``copy(_:into:)``, or nil with a line saying the test is skipped when the shared models are
    /// not beside the project.
    static func copyIfThere(_ project: String, into scratch: TemporaryDirectory) throws -> URL? {
        guard sharedIsThere else {
            print("skipped: no \(models.path) (the shared Core Data models sit beside the project)")
            return nil
        }
        return try copy(project, into: scratch)
    }

    struct Expected: Sendable, CustomStringConvertible {
        var project: String
        var bundle: String
        var versions: [String]
        var current: String
        /// Per version: entity name → (stored attributes, relationships).
        var entities: [[String: (attributes: Int, relationships: Int)]]
        var description: String { project }
    }

    static let bundles = [
        Expected(
            project: "mwkirk", bundle: "MWKCoreDataTests.xcdatamodeld",
            versions: ["MWKCoreDataTests", "MWKCoreDataTests2", "MWKCoreDataTests3"], current: "MWKCoreDataTests",
            entities: [
                ["Employee": (1, 0)], ["Dept": (1, 1), "Employee": (1, 1)], ["Dept": (1, 1), "Employee": (2, 1)],
            ]),
        Expected(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            versions: [
                "CoreDataMigration_Example", "CoreDataMigration_Example 2", "CoreDataMigration_Example 3",
                "CoreDataMigration_Example 4",
            ], current: "CoreDataMigration_Example 4",
            entities: [
                ["Post": (3, 0)], ["Post": (3, 0)], ["Color": (2, 1), "Post": (2, 1)], ["Color": (2, 1), "Post": (3, 1)],
            ]),
    ]

    @Test(arguments: bundles)
    func everyRealBundleIsReadWithItsVersionsInShippedOrder(_ expected: Expected) throws {
        let scratch = try TemporaryDirectory()
        guard let project = try Self.copyIfThere(expected.project, into: scratch) else { return }
        let model = try CoreDataModelReader.read(project.appending(path: expected.bundle))
        #expect(model.versions.map(\.name) == expected.versions)
        #expect(model.currentVersion == expected.current)
        for (version, entities) in zip(model.versions, expected.entities) {
            #expect(Set(version.entities.map(\.name)) == Set(entities.keys), "\(version.name)")
            for entity in version.entities {
                #expect(entity.attributes.count == entities[entity.name]?.attributes, "\(version.name).\(entity.name)")
                #expect(entity.relationships.count == entities[entity.name]?.relationships, "\(version.name).\(entity.name)")
            }
        }
        if expected.current == expected.versions.last {
            #expect(model.warnings.isEmpty)
        } else {
            // mwkirk's .xccurrentversion names its first version: reported, never reordered.
            #expect(
                model.warnings == [
                    .currentIsNotNewest(bundle: expected.bundle, current: expected.current, newest: expected.versions.last!)
                ])
        }
    }

    struct RealStore: Sendable, CustomStringConvertible {
        var project: String
        var bundle: String
        var version: String
        var store: String
        /// Core Data before iOS 11 / macOS 10.13 (mwkirk's stores: NSPersistenceFrameworkVersion 519)
        /// wrote no Z_MODELCACHE.
        var writesModelCache: Bool
        var description: String { "\(project)/\(store)" }
    }

    static let stores = [
        RealStore(
            project: "mwkirk", bundle: "MWKCoreDataTests.xcdatamodeld", version: "MWKCoreDataTests",
            store: "MWKCoreDataTests.sqlite", writesModelCache: false),
        RealStore(
            project: "mwkirk", bundle: "MWKCoreDataTests.xcdatamodeld", version: "MWKCoreDataTests2",
            store: "MWKCoreDataTests2.sqlite", writesModelCache: false),
        RealStore(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld", version: "CoreDataMigration_Example",
            store: "CoreDataMigration_Example_1.sqlite", writesModelCache: true),
        RealStore(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            version: "CoreDataMigration_Example 2", store: "CoreDataMigration_Example_2.sqlite", writesModelCache: true),
        RealStore(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            version: "CoreDataMigration_Example 3", store: "CoreDataMigration_Example_3.sqlite", writesModelCache: true),
        RealStore(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            version: "CoreDataMigration_Example 4", store: "CoreDataMigration_Example_WAL.sqlite", writesModelCache: true),
    ]

    /// What Python's sqlite3 sees of a store: every table's and index's statement (whitespace
    /// normalised), every table's columns in order with their types and key, every index's
    /// columns, Z_PRIMARYKEY's rows and Z_METADATA's identifiers and hashed entities.
    static let describe = """
        import sqlite3, sys, json, plistlib
        c = sqlite3.connect(sys.argv[1])
        norm = lambda s: " ".join(s.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split())
        out = {"objects": {}, "columns": {}, "indexes": {}}
        for kind, name, table, sql in c.execute("select type, name, tbl_name, sql from sqlite_master where sql is not null"):
            out["objects"][kind + " " + name] = table + ": " + norm(sql)
            if kind == "table":
                out["columns"][name] = [[r[1], r[2], r[5]] for r in c.execute("pragma table_info(%s)" % name)]
            else:
                out["indexes"][name] = [r[2] for r in c.execute("pragma index_info(%s)" % name)]
        out["primarykey"] = [list(r) for r in c.execute("select Z_ENT, Z_NAME, Z_SUPER from Z_PRIMARYKEY order by Z_ENT")]
        row = c.execute("select Z_PLIST from Z_METADATA").fetchone()
        if row:
            plist = plistlib.loads(row[0])
            out["identifiers"] = list(plist.get("NSStoreModelVersionIdentifiers", []))
            out["hashed"] = sorted(plist.get("NSStoreModelVersionHashes", {}).keys())
        print(json.dumps(out, sort_keys=True))
        """

    struct Description: Decodable, Equatable {
        var objects: [String: String]
        var columns: [String: [[Value]]]
        var indexes: [String: [String]]
        var primarykey: [[Value]]
        var identifiers: [String]?
        var hashed: [String]?
    }

    enum Value: Decodable, Equatable, CustomStringConvertible {
        case int(Int), text(String)
        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int.self) { self = .int(value) } else { self = .text(try container.decode(String.self)) }
        }
        var description: String { switch self { case .int(let v): "\(v)"; case .text(let v): v } }
    }

    static func describe(_ store: URL) throws -> Description {
        let result = try PythonSQLite.run(describe, [store.path])
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(Description.self, from: Data(result.stdout.utf8))
    }

    /// A store made by Python's sqlite3 from the layout's statements, in their order.
    static func make(_ layout: CoreDataStoreLayout, at url: URL) throws {
        let script = """
            import sqlite3, sys, json
            c = sqlite3.connect(sys.argv[1])
            for sql in json.load(open(sys.argv[2])):
                c.execute(sql)
            c.commit()
            """
        let statements = url.deletingPathExtension().appendingPathExtension("json")
        try JSONEncoder().encode(layout.objects.map(\.sql)).write(to: statements)
        let result = try PythonSQLite.run(script, [url.path, statements.path])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test(arguments: stores)
    func theGeneratedStoreHasTheRealStoresSchemaEntitiesAndIdentifiers(_ real: RealStore) throws {
        let scratch = try TemporaryDirectory()
        guard let project = try Self.copyIfThere(real.project, into: scratch) else { return }
        let model = try CoreDataModelReader.read(project.appending(path: real.bundle))
        let version = try #require(model.version(named: real.version))
        let layout = try CoreDataStoreLayout(version, options: .init(writesModelCache: real.writesModelCache))
        let generated = scratch.url.appending(path: "generated.sqlite")
        try Self.make(layout, at: generated)

        // The copy is read with its -wal (the WAL store's rows and schema live there).
        let truth = try Self.describe(project.appending(path: "stores/\(real.store)"))
        let made = try Self.describe(generated)
        #expect(made.objects == truth.objects)
        #expect(made.columns == truth.columns)
        #expect(made.indexes == truth.indexes)
        // Z_PRIMARYKEY: Core Data's numbering, parents and names.
        #expect(layout.entities.map { [Value.int($0.id), .text($0.name), .int($0.superID)] } == truth.primarykey)
        // Every entity of these models is a root: its own table.
        #expect(layout.entities.allSatisfy { $0.table == "Z" + $0.name.uppercased() })
        // Z_METADATA: the identifiers are reproduced; the hashes are not, and are said to be unknown.
        #expect(layout.versionIdentifiers == truth.identifiers)
        #expect(Set(layout.versionHashes.keys) == Set(truth.hashed ?? []))
        #expect(layout.versionHashes.values.allSatisfy { $0 == .unknown })
        #expect(layout.storeSchema().coreData?.versionHashes.isEmpty == true)
    }

    /// Z_METADATA of a store generated from a captured real one: Core Data's plist keys, each with
    /// the real store's value (hashes, identifiers, framework version), in a binary or XML plist;
    /// the store UUID in `Z_UUID` only (no real store has a plist `NSStoreUUID`). From the model
    /// alone: the same keys but the framework version, which only a store can tell.
    @Test(arguments: stores)
    func theGeneratedMetadataHasTheRealStoresPlistKeysAndValues(_ real: RealStore) throws {
        let scratch = try TemporaryDirectory()
        guard let project = try Self.copyIfThere(real.project, into: scratch) else { return }
        let truth = project.appending(path: "stores/\(real.store)")
        let captured = scratch.url.appending(path: "captured.sqlite")
        try SchemaGenerator(schema: StoreCapture.capture(StoreFileSet(main: truth)), seed: 5)
            .generate(into: StoreFileSet(main: captured), bytes: 40_000)
        let model = try CoreDataModelReader.read(project.appending(path: real.bundle))
        let layout = try CoreDataStoreLayout(
            #require(model.version(named: real.version)), options: .init(writesModelCache: real.writesModelCache))
        let fromModel = scratch.url.appending(path: "model.sqlite")
        try SchemaGenerator(schema: layout.storeSchema(), seed: 5).generate(
            into: StoreFileSet(main: fromModel), bytes: 40_000)
        let compared = try PythonSQLite.run(
            """
            import sqlite3, sys, plistlib
            def metadata(path):
                rows = sqlite3.connect(path).execute("select Z_VERSION, Z_UUID, Z_PLIST from Z_METADATA").fetchall()
                assert len(rows) == 1, (path, len(rows))
                version, uuid, plist = rows[0]
                assert version == 1 and len(uuid) == 36, (path, version, uuid)
                return plistlib.loads(plist)
            truth, captured, model = (metadata(p) for p in sys.argv[1:4])
            assert "NSStoreUUID" not in truth
            assert captured == truth, (sorted(captured), sorted(truth))
            del truth["NSPersistenceFrameworkVersion"]
            assert sorted(model) == sorted(truth), (sorted(model), sorted(truth))
            for key in ("NSStoreModelVersionIdentifiers", "NSStoreType", "_NSAutoVacuumLevel", "NSStoreModelVersionHashesVersion"):
                assert model[key] == truth[key], (key, model[key], truth[key])
            """, [truth.path, captured.path, fromModel.path])
        #expect(compared.status == 0, "\(compared.stderr)")
    }

    /// Entity numbering against Apple Notes' real `Z_PRIMARYKEY`: its entity tree (names and
    /// parents, read from the store) given in a scrambled order is numbered as Core Data numbered it.
    @Test func entitiesAreNumberedDepthFirstInCaseInsensitiveOrderAsNotesStoreShows() throws {
        guard FileManager.default.fileExists(atPath: SharedStores.folder.path) else {
            print("skipped: no \(SharedStores.folder.path)")
            return
        }
        let scratch = try TemporaryDirectory()
        let store = try SharedStores.copy(.notes, into: scratch.url)
        let rows = try Self.describe(store.main).primarykey.filter {
            if case .int(let id) = $0[0] { return id < 16000 } else { return false }
        }
        var names: [Int: String] = [:]
        for row in rows { if case .int(let id) = row[0], case .text(let name) = row[1] { names[id] = name } }
        let entities = rows.reversed().compactMap { row -> CoreDataEntity? in
            guard case .text(let name) = row[1], case .int(let parent) = row[2] else { return nil }
            return CoreDataEntity(name: name, parentEntity: parent == 0 ? nil : names[parent])
        }
        let layout = try CoreDataStoreLayout(
            CoreDataModelVersion(name: "Notes", versionIdentifier: nil, entities: entities, configurations: []))
        #expect(layout.entities.map { [Value.int($0.id), .text($0.name), .int($0.superID)] } == rows)
        #expect(layout.entities.first { $0.name == "ICFolder" }?.table == "ZICCLOUDSYNCINGOBJECT")
    }

    /// Join tables against Apple Photos' real store: its entity tree and, read back from each join
    /// table's two key columns, the many-to-many pairs (and which side is ordered) as a model; the
    /// layout must choose the same table name, column order, `Z_FOK_` column and index.
    @Test func manyToManyJoinTablesAreNamedOrderedAndIndexedAsPhotosStoreShows() throws {
        guard FileManager.default.fileExists(atPath: SharedStores.folder.path) else {
            print("skipped: no \(SharedStores.folder.path)")
            return
        }
        let scratch = try TemporaryDirectory()
        let store = try SharedStores.copy(.photos, into: scratch.url)
        let read = try PythonSQLite.run(
            """
            import sqlite3, sys, json, re
            c = sqlite3.connect(sys.argv[1])
            out = {"entities": [list(r) for r in c.execute("select Z_ENT, Z_NAME, Z_SUPER from Z_PRIMARYKEY where Z_ENT < 16000 order by Z_ENT")],
                   "joins": [], "indexes": [n for (n,) in c.execute("select name from sqlite_master where type = 'index'")]}
            for (name, sql) in c.execute("select name, sql from sqlite_master where type = 'table'"):
                if re.match(r"Z_[0-9]+[A-Z]", name):
                    out["joins"].append({"name": name, "sql": " ".join(sql.replace('"', "").split()),
                                         "columns": [r[1] for r in c.execute("pragma table_info(%s)" % name)]})
            print(json.dumps(out))
            """, [store.main.path])
        #expect(read.status == 0, "\(read.stderr)")
        struct Photos: Decodable {
            struct Join: Decodable { var name: String; var sql: String; var columns: [String] }
            var entities: [[Value]]
            var joins: [Join]
            var indexes: [String]
        }
        let photos = try JSONDecoder().decode(Photos.self, from: Data(read.stdout.utf8))
        var names: [Int: String] = [:]
        var entities: [String: CoreDataEntity] = [:]
        var order: [String] = []
        for row in photos.entities {
            guard case .int(let id) = row[0], case .text(let name) = row[1], case .int(let parent) = row[2] else { continue }
            names[id] = name
            entities[name] = CoreDataEntity(name: name, parentEntity: parent == 0 ? nil : names[parent])
            order.append(name)
        }
        /// `Z_30ASSETS` → (30, "ASSETS").
        func split(_ column: String) -> (Int, String)? {
            let body = column.dropFirst(2)
            let digits = body.prefix { $0.isNumber }
            guard column.hasPrefix("Z_"), let id = Int(digits) else { return nil }
            return (id, String(body.dropFirst(digits.count)))
        }
        // Two Asset-side columns carry a number Core Data gave for a name collision
        // (Z_3KEYASSETS1, Z_3REPRESENTATIVEASSETS1); which relationship gets it is not derived.
        let collisions = Set(["Z_3SUGGESTIONSBEINGKEYASSETS", "Z_3MEMORIESBEINGREPRESENTATIVEASSETS"])
        var compared: [Photos.Join] = []
        for join in photos.joins {
            let keys = join.columns.filter { !$0.hasPrefix("Z_FOK_") }
            let ordered = Set(join.columns.filter { $0.hasPrefix("Z_FOK_") }.map { "Z_" + $0.dropFirst("Z_FOK_".count) })
            guard keys.count == 2, let (first, firstName) = split(keys[0]), let a = names[first] else { continue }
            if keys[1] == "REFLEXIVE" {
                entities[a]?.relationships.append(
                    CoreDataRelationship(name: firstName, destinationEntity: a, inverseName: firstName, inverseEntity: a, isToMany: true))
            } else {
                guard let (second, secondName) = split(keys[1]), let b = names[second] else { continue }
                // keys[0] holds a's rows, named after b's relationship to a; keys[1] the other way.
                entities[a]?.relationships.append(
                    CoreDataRelationship(
                        name: secondName, destinationEntity: b, inverseName: firstName, inverseEntity: b, isToMany: true,
                        isOrdered: ordered.contains(keys[1])))
                entities[b]?.relationships.append(
                    CoreDataRelationship(
                        name: firstName, destinationEntity: a, inverseName: secondName, inverseEntity: a, isToMany: true,
                        isOrdered: ordered.contains(keys[0])))
            }
            if !collisions.contains(join.name) { compared.append(join) }
        }
        let layout = try CoreDataStoreLayout(
            CoreDataModelVersion(name: "Photos", versionIdentifier: nil, entities: order.compactMap { entities[$0] }, configurations: []))
        let made = Dictionary(uniqueKeysWithValues: layout.objects.filter { $0.name.hasPrefix("Z_") && $0.kind == .table }.map { ($0.name, $0.sql) })
        #expect(compared.count == 19, "\(compared.map(\.name))")
        for join in compared {
            #expect(made[join.name].map { $0.split(separator: " ").joined(separator: " ") } == join.sql, "\(join.name)")
        }
        let joinIndexes = layout.objects.filter { $0.kind == .index && $0.table.hasPrefix("Z_") }.map(\.name)
        let expectedIndexes = joinIndexes.filter { name in !collisions.contains { name.hasPrefix($0 + "_") } }
        #expect(Set(expectedIndexes).isSubset(of: Set(photos.indexes)), "\(Set(expectedIndexes).subtracting(photos.indexes))")
    }

    @Test func versionsAreOrderedAsFinderOrdersTheirNamesUnlessAnOrderIsGiven() throws {
        let scratch = try TemporaryDirectory()
        let note = #"<?xml version="1.0"?><model><entity name="Note"><attribute name="title" attributeType="String"/></entity></model>"#
        let bundle = try ModelBundle.write(
            "App", versions: ["App 10", "App", "App 2", "App 3"].map { ModelBundle.Version($0, contents: note) }, in: scratch.url)
        let read = try CoreDataModelReader.read(bundle)
        #expect(read.versions.map(\.name) == ["App", "App 2", "App 3", "App 10"])
        #expect(CoreDataModelReader.finderOrder("App9", "App10") && CoreDataModelReader.finderOrder("app2", "App3"))
        #expect(read.warnings == [.noCurrentVersion(bundle: "App.xcdatamodeld")])
        let ordered = try CoreDataModelReader.read(bundle, order: ["App", "App 3", "App 2", "App 10"])
        #expect(ordered.versions.map(\.name) == ["App", "App 3", "App 2", "App 10"])
        #expect(throws: CoreDataModelError.self) { try CoreDataModelReader.read(bundle, order: ["App", "App 2"]) }
        #expect(CoreDataCatalog.catalogName(of: "App 2") == "App-2")
    }

    /// A version that only parts its entities by configuration (its version identifier the same)
    /// stores them as the one before did: its plan is the split (and, out of Documents, a quarantine), with no Core Data migration that
    /// could only be skipped, whose crash points would never fire, whatever the version hashes.
    @Test func aVersionThatOnlyAddsConfigurationsIsReachedByTheSplitAlone() throws {
        let scratch = try TemporaryDirectory()
        let habit = #"<entity name="Habit"><attribute name="title" attributeType="String"/></entity>"#
        let streak = #"<entity name="Streak"><attribute name="days" attributeType="Integer 32"/></entity>"#
        let parted = #"<configuration name="Cloud"><memberEntity name="Habit"/></configuration><configuration name="Local"><memberEntity name="Streak"/></configuration>"#
        // A uniqueness constraint: Habit's version hash is not reproduced, yet no plan is refused for it.
        let unique = #"<uniquenessConstraints><uniquenessConstraint><constraint value="title"/></uniquenessConstraint></uniquenessConstraints>"#
        let constrained = habit.replacingOccurrences(of: "</entity>", with: unique + "</entity>")
        let bundle = try ModelBundle.write(
            "Habits",
            versions: ModelBundle.numbered("Habits", [constrained + streak, constrained + streak + parted], identifiers: false),
            in: scratch.url)
        var catalog = try CoreDataLintTests.catalog(bundle, at: scratch.url, store: "documents/Habits.sqlite")
        try CoreDataCatalog.writePlans(in: &catalog)
        let plan = try UpgradePlan.load(from: try #require(catalog.planURL(of: catalog.version("Habits-2"))))
        #expect(plan.steps.map(\.kind) == [.split, .quarantine])
        #expect(try CoreDataCatalog.unresolvedPlans(in: catalog).isEmpty)
        #expect(try catalog.version("Habits-2").summary?.contains("UNRESOLVED") == false)
    }

    /// A version whose configurations put entities in two stores gets a store per configuration,
    /// each with its entities' tables and Core Data's own; configurations that do not part the store
    /// (an entity in none) are named, and the version keeps its one store.
    @Test func configurationsInSeveralStoresGiveAStorePerConfigurationOrSayWhyNot() throws {
        let scratch = try TemporaryDirectory()
        let habit = #"<entity name="Habit"><attribute name="title" attributeType="String"/></entity>"#
        let streak = #"<entity name="Streak"><attribute name="days" attributeType="Integer 32"/></entity>"#
        let parted = #"<configuration name="Cloud"><memberEntity name="Habit"/></configuration><configuration name="Local"><memberEntity name="Streak"/></configuration>"#
        func make(_ second: String, _ place: String = "Local") throws -> CoreDataCatalog.Made {
            let bundle = try ModelBundle.write(
                "Habits",
                versions: [
                    ModelBundle.Version("Habits", contents: #"<?xml version="1.0"?><model>"# + habit + streak + "</model>"),
                    ModelBundle.Version(
                        "Habits 2", contents: #"<?xml version="1.0"?><model>"# + habit + streak + second + "</model>"),
                ], in: scratch.url.appending(path: UUID().uuidString))
            return try CoreDataCatalog.make(
                from: try CoreDataModelReader.read(bundle), store: try #require(ContainerLocation("documents/Habits.sqlite")),
                configurationStores: [place: try #require(ContainerLocation("caches/Local.sqlite"))])
        }
        let split = try make(parted)
        let stores = try #require(split.manifest.versions.last?.stores)
        // Beside the store, but out of Documents: a configuration's store is no more the user's than the store was.
        #expect(stores.map(\.location.description) == ["applicationSupport/Cloud.sqlite", "caches/Local.sqlite"])
        #expect(stores.map(\.tables) == [["ZHABIT", "Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"], ["ZSTREAK", "Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]])
        #expect(split.manifest.versions.first?.stores.count == 1)
        #expect(split.notes.contains { $0.hasPrefix("Habits 2: its configurations put its entities in 2 stores") })

        let notParted = try make(#"<configuration name="Cloud"><memberEntity name="Habit"/></configuration><configuration name="Local"><memberEntity name="Habit"/><memberEntity name="Streak"/></configuration>"#)
        #expect(notParted.manifest.versions.allSatisfy { $0.stores.count == 1 })
        #expect(notParted.notes.contains { $0.contains("but entity Habit is in configurations Cloud and Local") }, "\(notParted.notes)")
        // A place given for a configuration the model does not have is a mistake, named.
        #expect(throws: CoreDataCatalog.Problem.unknownConfiguration("Lokal", known: ["Cloud", "Local"])) {
            try make(parted, "Lokal")
        }
    }

    static let detailed = #"""
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" userDefinedModelVersionIdentifier="7">
            <entity name="Note" representedClassName="NoteObject" versionHashModifier="v2" elementID="Memo" syncable="YES">
                <attribute name="body" optional="YES" attributeType="String" elementID="text"/>
                <attribute name="draft" optional="YES" attributeType="String" transient="YES"/>
                <attribute name="id" attributeType="UUID" usesScalarValueType="NO"/>
                <attribute name="length" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="body.length"/>
                <attribute name="scan" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
                <attribute name="stars" attributeType="Integer 16" defaultValueString="3" versionHashModifier="x"/>
                <relationship name="folder" optional="YES" maxCount="1" deletionRule="Deny" destinationEntity="Folder" inverseName="notes" inverseEntity="Folder"/>
                <fetchIndex name="byStars">
                    <fetchIndexElement property="stars" type="Binary" order="descending"/>
                    <fetchIndexElement property="folder" type="Binary" order="ascending"/>
                </fetchIndex>
                <uniquenessConstraints>
                    <uniquenessConstraint><constraint value="id"/></uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
            <entity name="Folder" isAbstract="YES" syncable="YES">
                <relationship name="notes" optional="YES" toMany="YES" minCount="1" maxCount="50" deletionRule="Cascade" destinationEntity="Note" inverseName="folder" inverseEntity="Note"/>
            </entity>
            <configuration name="Cloud" usedWithCloudKit="YES"><memberEntity name="Note"/><memberEntity name="Folder"/></configuration>
        </model>
        """#

    @Test func everyFieldOfAModelFileIsReadAndATransientAttributeHasNoColumn() throws {
        let scratch = try TemporaryDirectory()
        let folder = scratch.url.appending(path: "Notes.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(Self.detailed.utf8).write(to: folder.appending(path: "contents"))
        let model = try CoreDataModelReader.read(folder)
        let version = try #require(model.versions.first)
        #expect(model.currentVersion == "Notes" && version.versionIdentifier == "7")
        let note = try #require(version.entity(named: "Note"))
        #expect(note.representedClassName == "NoteObject" && note.versionHashModifier == "v2" && note.renamingIdentifier == "Memo")
        #expect(note.attributes.map(\.name) == ["body", "draft", "id", "length", "scan", "stars"])
        #expect(note.attributes[0].renamingIdentifier == "text" && note.attributes[0].isOptional)
        #expect(note.attributes[1].isTransient && note.attributes[2].attributeType == .uuid && !note.attributes[2].isOptional)
        #expect(note.attributes[3].isDerived && note.attributes[4].allowsExternalBinaryDataStorage)
        #expect(note.attributes[5].defaultValueString == "3" && note.attributes[5].versionHashModifier == "x")
        #expect(note.relationships == [
            CoreDataRelationship(name: "folder", destinationEntity: "Folder", inverseName: "notes", inverseEntity: "Folder", isOptional: true, deletionRule: .deny, maxCount: 1),
        ])
        #expect(note.fetchIndexes == [
            CoreDataFetchIndex(name: "byStars", elements: [.init(property: "stars", isAscending: false), .init(property: "folder")]),
        ])
        #expect(note.uniquenessConstraints == [["id"]])
        let folderEntity = try #require(version.entity(named: "Folder"))
        #expect(folderEntity.isAbstract && folderEntity.relationships.first?.isToMany == true)
        #expect(folderEntity.relationships.first?.minCount == 1 && folderEntity.relationships.first?.maxCount == 50)
        #expect(version.configurations == [CoreDataConfiguration(name: "Cloud", memberEntities: ["Note", "Folder"], usedWithCloudKit: true)])

        let layout = try CoreDataStoreLayout(version)
        let sql = layout.objects.map(\.sql)
        #expect(sql.contains("CREATE TABLE ZNOTE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZLENGTH INTEGER, ZSTARS INTEGER, ZFOLDER INTEGER, ZBODY VARCHAR, ZID BLOB, ZSCAN BLOB )"))
        #expect(sql.contains("CREATE INDEX Z_Note_byStars ON ZNOTE (ZSTARS COLLATE BINARY DESC, ZFOLDER COLLATE BINARY ASC)"))
        #expect(sql.contains("CREATE UNIQUE INDEX Z_Note_UNIQUE_id ON ZNOTE (ZID COLLATE BINARY ASC)"))
        #expect(layout.entities.map(\.name) == ["Folder", "Note"])
        // A UUID column is a convention no real store here shows: said, not hidden.
        #expect(layout.assumptions.contains { $0.hasPrefix("Note.id: a UUID attribute is taken to be a BLOB column") })
    }

    @Test func aToManyWithoutInverseIsRefusedNamingTheRelationship() throws {
        let version = CoreDataModelVersion(
            name: "App 3", versionIdentifier: nil,
            entities: [
                CoreDataEntity(name: "Tag"),
                CoreDataEntity(name: "Note", relationships: [CoreDataRelationship(name: "tags", destinationEntity: "Tag", isToMany: true)]),
            ], configurations: [])
        let error = try #require(throws: CoreDataSchemaError.self) { try CoreDataStoreLayout(version) }
        #expect(error.reason == .toManyWithoutInverse)
        #expect(error.description.hasPrefix("model version App 3: Note.tags is a to-many relationship without an inverse"))
    }

    @Test func aModelFileThatIsNotWellFormedIsRefusedNamingTheFile() throws {
        let scratch = try TemporaryDirectory()
        let folder = scratch.url.appending(path: "Broken.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(#"<model><entity name="Note"><attribute name="title" attributeType="Strin"/></entity></model>"#.utf8)
            .write(to: folder.appending(path: "contents"))
        let error = try #require(throws: CoreDataModelError.self) { try CoreDataModelReader.read(folder) }
        #expect(error.description.contains(folder.appending(path: "contents").path))
        #expect(error.reason == .invalidValue(element: "attribute", attribute: "attributeType", value: "Strin"))
    }
}
