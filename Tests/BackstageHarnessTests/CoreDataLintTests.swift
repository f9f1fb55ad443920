import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// `catalog lint` on catalogs made from Core Data models: whether Core Data's lightweight migration
/// can infer each pair of versions, judged on the real histories of `../shared/coredata-models`
/// (copied first) and on small bundles written here; and `inspect` naming the version that wrote a store.
@Suite struct CoreDataLintTests {
    /// Writes `Name.xcdatamodeld` in `folder` with one version per `contents` body (entities only),
    /// named `Name`, `Name 2`, …, and returns it.
    static func writeBundle(_ name: String, in folder: URL, identifiers: Bool = true, _ versions: [String]) throws
        -> URL
    {
        try ModelBundle.write(name, versions: ModelBundle.numbered(name, versions, identifiers: identifiers), in: folder)
    }

    /// A catalog made from the bundle at `bundle` (its mapping models `mappings`) in `folder/name`.
    static func catalog(
        _ bundle: URL, mappings: [URL] = [], at folder: URL, store: String = "documents/App.sqlite"
    ) throws -> CatalogFolder {
        let model = try CoreDataModelReader.read(bundle)
        let url = folder.appending(path: "catalog")
        let (catalog, _) = try CoreDataCatalog.create(
            at: url, from: model, store: try #require(ContainerLocation(store)))
        try CoreDataCatalog.keep(model: bundle, mappings: mappings, in: catalog)
        return try CatalogFolder(at: url)
    }

    @Test func wiboscosHistoryWithItsMappingModelsHasNoErrorAndNamesItsCustomPolicy() throws {
        let scratch = try TemporaryDirectory()
        guard let project = try CoreDataModelTests.copyIfThere("wibosco", into: scratch) else { return }
        let mappings = ["Migration1to2", "Migration2to3"].map {
            project.appending(path: "mappings/\($0).xcmappingmodel")
        }
        let catalog = try Self.catalog(
            project.appending(path: "CoreDataMigration_Example.xcdatamodeld"), mappings: mappings, at: scratch.url)
        let findings = try CatalogLint.findings(in: catalog)
        #expect(!findings.contains { $0.severity == .error }, "\(findings)")
        // Version 3's Post gets its Color from the app's own NSEntityMigrationPolicy: named, as a warning.
        #expect(findings.count == 1, "\(findings)")
        let policy = try #require(findings.first)
        #expect(policy.version == "CoreDataMigration_Example-3")
        #expect(policy.message.contains("Post2ToPost3MigrationPolicy"), "\(policy)")
        #expect(policy.message.contains("needs the developer's SQL"), "\(policy)")
        #expect(CatalogCheck.problems(in: catalog).allSatisfy { $0.message.contains("no plan reaches it") })

        // Without them, version 3's mandatory new relationship Post.color cannot be inferred.
        let bare = scratch.url.appending(path: "bare")
        try FileManager.default.createDirectory(at: bare, withIntermediateDirectories: true)
        let unmapped = try CatalogLint.findings(
            in: Self.catalog(project.appending(path: "CoreDataMigration_Example.xcdatamodeld"), at: bare))
        #expect(unmapped.count == 1 && unmapped.allSatisfy { $0.severity == .error }, "\(unmapped)")
        #expect(
            unmapped.first?.message.contains(
                "model version CoreDataMigration_Example 2 → CoreDataMigration_Example 3, entity Post, relationship color"
            ) == true, "\(unmapped)")
    }

    @Test func theMappingModelsOfWiboscoNameTheVersionsTheyMapAndTheirPolicy() throws {
        let scratch = try TemporaryDirectory()
        guard let project = try CoreDataModelTests.copyIfThere("wibosco", into: scratch) else { return }
        let first = try CoreDataMappingModel.read(project.appending(path: "mappings/Migration1to2.xcmappingmodel"))
        #expect(first.sourceVersion == "CoreDataMigration_Example")
        #expect(first.destinationVersion == "CoreDataMigration_Example 2")
        #expect(first.entityMappings.map(\.destinationEntity) == ["Post"])
        #expect(first.entityMappings.first?.properties == ["date", "hexColor", "postID"])
        #expect(first.customPolicies.isEmpty)
        let second = try CoreDataMappingModel.read(project.appending(path: "mappings/Migration2to3.xcmappingmodel"))
        #expect(second.sourceVersion == "CoreDataMigration_Example 2")
        #expect(
            second.customPolicies.map(\.migrationPolicyClassName)
                == ["CoreDataMigration_Example.Post2ToPost3MigrationPolicy"])
    }

    /// mwkirk's version 3 replaces Employee.name with mandatory firstName and lastName without
    /// defaults: lightweight migration cannot fill them for the employees a version 2 store holds
    /// (its real store has three). Version 2, an optional relationship and a new entity, is inferable.
    @Test func mwkirksHistoryIsInferableUntilVersion3AddsMandatoryNamesWithoutDefaults() throws {
        let scratch = try TemporaryDirectory()
        guard let project = try CoreDataModelTests.copyIfThere("mwkirk", into: scratch) else { return }
        var catalog = try Self.catalog(project.appending(path: "MWKCoreDataTests.xcdatamodeld"), at: scratch.url)
        let model = try #require(try CoreDataCatalog.keptModel(of: catalog)).model
        guard case .success(let mapping) = InferredMigration.infer(from: model.versions[0], to: model.versions[1])
        else {
            Issue.record("version 2 should be inferable")
            return
        }
        #expect(mapping.entities.map { [$0.source, $0.destination] } == [[nil, "Dept"], ["Employee", "Employee"]])
        #expect(mapping.entities[1].relationships == [.init(source: nil, destination: "dept")])

        var findings = try CatalogLint.findings(in: catalog)
        #expect(findings.map(\.version) == ["MWKCoreDataTests3", "MWKCoreDataTests3"], "\(findings)")
        #expect(findings.allSatisfy { $0.severity == .error && $0.table == "ZEMPLOYEE" })
        #expect(findings.contains { $0.message.contains("entity Employee, attribute firstName") }, "\(findings)")
        #expect(findings.contains { $0.message.contains("entity Employee, attribute lastName") }, "\(findings)")

        // Captured, the real version 2 store says how many employees would lack them.
        let captured = try CoreDataCatalog.capture(
            StoreFileSet(main: project.appending(path: "stores/MWKCoreDataTests2.sqlite")), into: &catalog)
        #expect(captured == "MWKCoreDataTests2")
        findings = try CatalogLint.findings(in: catalog)
        #expect(findings.count == 2 && findings.allSatisfy { $0.severity == .error }, "\(findings)")
        #expect(findings.allSatisfy { $0.message.contains("3 rows of ZEMPLOYEE in the captured store") }, "\(findings)")
    }

    static let pantry = [
        // 1: Jar and Shelf are two hierarchies; Item's notes are text, its name optional.
        """
        <entity name="Item"><attribute name="name" optional="YES" attributeType="String"/>
            <attribute name="notes" optional="YES" attributeType="String"/>
            <attribute name="count" optional="YES" attributeType="Integer 16"/></entity>
        <entity name="Jar"><attribute name="lid" optional="YES" attributeType="String"/></entity>
        <entity name="Shelf"><attribute name="label" optional="YES" attributeType="String"/></entity>
        """,
        // 2: notes become Binary, name mandatory without a default, Jar moves under Shelf; count widens.
        """
        <entity name="Item"><attribute name="name" attributeType="String"/>
            <attribute name="notes" optional="YES" attributeType="Binary"/>
            <attribute name="count" optional="YES" attributeType="Integer 64"/></entity>
        <entity name="Jar" parentEntity="Shelf"><attribute name="lid" optional="YES" attributeType="String"/></entity>
        <entity name="Shelf"><attribute name="label" optional="YES" attributeType="String"/></entity>
        """,
        // 3: an optional attribute and an entity added, Shelf.label renamed through its Renaming ID.
        """
        <entity name="Item"><attribute name="name" attributeType="String"/>
            <attribute name="notes" optional="YES" attributeType="Binary"/>
            <attribute name="count" optional="YES" attributeType="Integer 64"/>
            <attribute name="bestBefore" optional="YES" attributeType="Date"/></entity>
        <entity name="Jar" parentEntity="Shelf"><attribute name="lid" optional="YES" attributeType="String"/></entity>
        <entity name="Shelf"><attribute name="title" optional="YES" attributeType="String" elementID="label"/></entity>
        <entity name="Tin"><attribute name="size" optional="YES" attributeType="Integer 32"/></entity>
        """,
    ]

    @Test func uninferableChangesAreErrorsNamingTheModelVersionEntityAndAttribute() throws {
        let scratch = try TemporaryDirectory()
        let bundle = try Self.writeBundle("Pantry", in: scratch.url, Self.pantry)
        let catalog = try Self.catalog(bundle, at: scratch.url)
        let findings = try CatalogLint.findings(in: catalog)
        #expect(findings.allSatisfy { $0.severity == .error && $0.version == "Pantry-2" }, "\(findings)")
        let messages = findings.map(\.message)
        #expect(messages.count == 3, "\(messages)")
        let place = "model version Pantry → Pantry 2, entity"
        #expect(
            messages.contains {
                $0.contains("\(place) Item, attribute notes") && $0.contains("from String to Binary")
            }, "\(messages)")
        #expect(
            messages.contains {
                $0.contains("\(place) Item, attribute name") && $0.contains("mandatory without a default")
            }, "\(messages)")
        #expect(
            messages.contains { $0.contains("\(place) Jar:") && $0.contains("cannot merge two entity hierarchies") },
            "\(messages)")
        // catalog check refuses the catalog for the same reasons.
        let problems = CatalogCheck.problems(in: catalog).map(\.message)
        #expect(problems.contains { $0.contains("\(place) Item, attribute notes") }, "\(problems)")

        // Version 3's changes are all inferable: the renamed attribute keeps its values.
        let model = try #require(try CoreDataCatalog.keptModel(of: catalog)).model
        guard case .success(let mapping) = InferredMigration.infer(from: model.versions[1], to: model.versions[2])
        else {
            Issue.record("version 3 should be inferable")
            return
        }
        #expect(mapping.entities.first { $0.destination == "Shelf" }?.attributes == [.init(source: "label", destination: "title")])
        #expect(mapping.entities.first { $0.destination == "Tin" }?.source == nil)
    }

    /// Larder 1 → 2 makes Item.name mandatory without a default (same columns, told apart by the
    /// version identifiers). A store of version 1 with `nulls` of its `rows` items nameless.
    static func larderStore(at url: URL, rows: Int, nulls: Int, catalog: CatalogFolder) throws {
        let schema = try catalog.schema(of: try #require(catalog.manifest.versions.first?.stores.first))
        let statements = url.deletingPathExtension().appendingPathExtension("json")
        try JSONEncoder().encode(schema.objects.map(\.sql)).write(to: statements)
        let result = try PythonSQLite.run(
            """
            import sqlite3, sys, json, plistlib
            c = sqlite3.connect(sys.argv[1])
            for sql in json.load(open(sys.argv[2])):
                c.execute(sql)
            rows, nulls = int(sys.argv[3]), int(sys.argv[4])
            for pk in range(1, rows + 1):
                c.execute("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, 1, 1, ?)",
                          (pk, None if pk <= nulls else "item %d" % pk))
            c.execute("INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, ?)", (rows,))
            plist = plistlib.dumps({"NSStoreModelVersionIdentifiers": ["1"],
                "NSStoreModelVersionHashes": {"Item": b"0" * 32}, "NSStoreType": "SQLite"}, fmt=plistlib.FMT_BINARY)
            c.execute("INSERT INTO Z_METADATA VALUES (1, 'B3A1C2D4-0000-4000-8000-000000000001', ?)", (plist,))
            c.commit()
            """, [url.path, statements.path, "\(rows)", "\(nulls)"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    static let larder = [
        #"<entity name="Item"><attribute name="name" optional="YES" attributeType="String"/></entity>"#,
        #"<entity name="Item"><attribute name="name" attributeType="String"/></entity>"#,
    ]

    @Test func nullsOfACapturedStoreUnderAnAttributeMadeMandatoryAreAnErrorNamingTheirShare() throws {
        let scratch = try TemporaryDirectory()
        let bundle = try Self.writeBundle("Larder", in: scratch.url, Self.larder)
        var catalog = try Self.catalog(bundle, at: scratch.url)
        let store = scratch.url.appending(path: "Larder.sqlite")
        try Self.larderStore(at: store, rows: 40, nulls: 10, catalog: catalog)
        #expect(try CoreDataCatalog.capture(StoreFileSet(main: store), into: &catalog) == "Larder")
        let findings = try CatalogLint.findings(in: catalog)
        #expect(findings.count == 1 && findings[0].severity == .error, "\(findings)")
        #expect(findings[0].message.contains("model version Larder → Larder 2, entity Item, attribute name"))
        #expect(findings[0].message.contains("10 of 40 rows of ZITEM in the captured store, 25%, hold NULL in ZNAME"))
    }

    /// Larder 2 makes Item.name mandatory without a default and adds a uniqueness constraint on
    /// Item.code, which repeats in the captured store: both are said, the data one too although the
    /// other already makes the migration uninferable (it was found only once that one was mended).
    @Test func whatTheDataWouldBreakIsSaidBesideAnUninferableChange() throws {
        let scratch = try TemporaryDirectory()
        let bundle = try Self.writeBundle(
            "Larder", in: scratch.url,
            [
                #"<entity name="Item"><attribute name="name" optional="YES" attributeType="String"/><attribute name="code" optional="YES" attributeType="String"/></entity>"#,
                #"<entity name="Item"><attribute name="name" attributeType="String"/><attribute name="code" optional="YES" attributeType="String"/><uniquenessConstraints><uniquenessConstraint><constraint value="code"/></uniquenessConstraint></uniquenessConstraints></entity>"#,
            ])
        var catalog = try Self.catalog(bundle, at: scratch.url)
        let store = scratch.url.appending(path: "Larder.sqlite")
        let schema = try catalog.schema(of: try #require(catalog.manifest.versions.first?.stores.first))
        let statements = scratch.url.appending(path: "schema.json")
        try JSONEncoder().encode(schema.objects.map(\.sql)).write(to: statements)
        let made = try PythonSQLite.run(
            """
            import sqlite3, sys, json, plistlib
            c = sqlite3.connect(sys.argv[1])
            for sql in json.load(open(sys.argv[2])):
                c.execute(sql)
            for pk in range(1, 41):
                c.execute("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNAME, ZCODE) VALUES (?, 1, 1, ?, ?)",
                          (pk, None if pk <= 10 else "item %d" % pk, "c%d" % (pk % 20)))
            c.execute("INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 40)")
            plist = plistlib.dumps({"NSStoreModelVersionIdentifiers": ["1"],
                "NSStoreModelVersionHashes": {"Item": b"0" * 32}, "NSStoreType": "SQLite"}, fmt=plistlib.FMT_BINARY)
            c.execute("INSERT INTO Z_METADATA VALUES (1, 'B3A1C2D4-0000-4000-8000-000000000002', ?)", (plist,))
            c.commit()
            """, [store.path, statements.path])
        #expect(made.status == 0, "\(made.stderr)")
        try CoreDataCatalog.capture(StoreFileSet(main: store), into: &catalog)
        let findings = try CatalogLint.findings(in: catalog).filter { $0.severity == .error }
        #expect(findings.count == 2, "\(findings)")
        #expect(findings.contains { $0.message.contains("entity Item, attribute name") }, "\(findings)")
        #expect(
            findings.contains {
                $0.message.contains("attribute code: the new uniqueness constraint fails on the captured store")
            }, "\(findings)")
    }

    @Test func aCapturedStoreWithoutNullsThereMakesTheSameChangeAWarning() throws {
        let scratch = try TemporaryDirectory()
        let bundle = try Self.writeBundle("Larder", in: scratch.url, Self.larder)
        var catalog = try Self.catalog(bundle, at: scratch.url)
        let store = scratch.url.appending(path: "Larder.sqlite")
        try Self.larderStore(at: store, rows: 40, nulls: 0, catalog: catalog)
        try CoreDataCatalog.capture(StoreFileSet(main: store), into: &catalog)
        let findings = try CatalogLint.findings(in: catalog)
        #expect(findings.count == 1 && findings[0].severity == .warning, "\(findings)")
        #expect(findings[0].message.contains("no row of the captured store holds NULL in ZITEM.ZNAME"))
    }

    struct RealStore: Sendable, CustomStringConvertible {
        var project: String
        var bundle: String
        var store: String
        var version: String
        var evidence: StoreInspection.ModelVersionMatch.Evidence
        var description: String { store }
    }

    static let realStores = [
        RealStore(
            project: "mwkirk", bundle: "MWKCoreDataTests.xcdatamodeld", store: "MWKCoreDataTests.sqlite",
            version: "MWKCoreDataTests", evidence: .schema),
        RealStore(
            project: "mwkirk", bundle: "MWKCoreDataTests.xcdatamodeld", store: "MWKCoreDataTests2.sqlite",
            version: "MWKCoreDataTests2", evidence: .schema),
        RealStore(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            store: "CoreDataMigration_Example_1.sqlite", version: "CoreDataMigration_Example", evidence: .schema),
        RealStore(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            store: "CoreDataMigration_Example_2.sqlite", version: "CoreDataMigration_Example-2", evidence: .schema),
        RealStore(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            store: "CoreDataMigration_Example_3.sqlite", version: "CoreDataMigration_Example-3", evidence: .schema),
        RealStore(
            project: "wibosco", bundle: "CoreDataMigration_Example.xcdatamodeld",
            store: "CoreDataMigration_Example_WAL.sqlite", version: "CoreDataMigration_Example-4", evidence: .schema),
    ]

    @Test(arguments: realStores)
    func inspectNamesTheModelVersionThatWroteEachRealStore(_ real: RealStore) throws {
        let scratch = try TemporaryDirectory()
        guard let project = try CoreDataModelTests.copyIfThere(real.project, into: scratch) else { return }
        let catalog = try Self.catalog(project.appending(path: real.bundle), at: scratch.url)
        let inspection = try StoreInspection(
            of: StoreFileSet(main: project.appending(path: "stores/\(real.store)")), catalog: catalog)
        let match = try #require(inspection.modelVersion)
        #expect(match.versions == [real.version])
        #expect(match.evidence == real.evidence)
    }

    @Test func twoModelVersionsWithOneSchemaAreBothNamedAndNeitherPicked() throws {
        let scratch = try TemporaryDirectory()
        // No version identifiers: only the optionality differs, which no column shows.
        let bundle = try Self.writeBundle("Larder", in: scratch.url, identifiers: false, Self.larder)
        let catalog = try Self.catalog(bundle, at: scratch.url)
        let store = scratch.url.appending(path: "Larder.sqlite")
        try Self.larderStore(at: store, rows: 5, nulls: 0, catalog: catalog)
        let inspection = try StoreInspection(of: StoreFileSet(main: store), catalog: catalog)
        #expect(inspection.modelVersion?.versions == ["Larder", "Larder-2"])
        #expect(inspection.modelVersion?.version == nil)
        #expect(inspection.catalogMatch == nil)

        // With identifiers, the store's Z_METADATA ("1") tells them apart.
        let named = scratch.url.appending(path: "named")
        try FileManager.default.createDirectory(at: named, withIntermediateDirectories: true)
        let identified = try Self.catalog(Self.writeBundle("Larder", in: named, Self.larder), at: named)
        let told = try StoreInspection(of: StoreFileSet(main: store), catalog: identified)
        #expect(told.modelVersion?.versions == ["Larder"])
        #expect(told.modelVersion?.evidence == .versionIdentifiers)
    }

    /// Changes Apple lists as inferable: none of them is reported.
    @Test func changesLightweightMigrationSupportsAreInferredWithTheirMapping() throws {
        let scratch = try TemporaryDirectory()
        let bundle = try Self.writeBundle(
            "Garden", in: scratch.url,
            [
                """
                <entity name="Bed"><attribute name="soil" attributeType="String"/>
                    <relationship name="plant" optional="YES" maxCount="1" destinationEntity="Plant" inverseName="bed" inverseEntity="Plant"/>
                    <relationship name="tools" optional="YES" toMany="YES" destinationEntity="Tool" inverseName="bed" inverseEntity="Tool"/></entity>
                <entity name="Plant"><attribute name="name" optional="YES" attributeType="String"/>
                    <relationship name="bed" optional="YES" maxCount="1" destinationEntity="Bed" inverseName="plant" inverseEntity="Bed"/></entity>
                <entity name="Tool"><relationship name="bed" optional="YES" maxCount="1" destinationEntity="Bed" inverseName="tools" inverseEntity="Bed"/></entity>
                """,
                // soil optional; plant to-many; tools ordered; Plant renamed Flower (Renaming ID) under a new
                // abstract Living that takes its name up; a mandatory attribute with a default added.
                """
                <entity name="Bed"><attribute name="soil" optional="YES" attributeType="String"/>
                    <attribute name="rows" attributeType="Integer 16" defaultValueString="1"/>
                    <relationship name="plant" optional="YES" toMany="YES" destinationEntity="Flower" inverseName="bed" inverseEntity="Flower"/>
                    <relationship name="tools" optional="YES" toMany="YES" ordered="YES" destinationEntity="Tool" inverseName="bed" inverseEntity="Tool"/></entity>
                <entity name="Living" isAbstract="YES"><attribute name="name" optional="YES" attributeType="String"/></entity>
                <entity name="Flower" parentEntity="Living" elementID="Plant">
                    <relationship name="bed" optional="YES" maxCount="1" destinationEntity="Bed" inverseName="plant" inverseEntity="Bed"/></entity>
                <entity name="Tool"><relationship name="bed" optional="YES" maxCount="1" destinationEntity="Bed" inverseName="tools" inverseEntity="Bed"/></entity>
                """,
            ])
        let catalog = try Self.catalog(bundle, at: scratch.url)
        #expect(try CatalogLint.findings(in: catalog).isEmpty)
        let model = try #require(try CoreDataCatalog.keptModel(of: catalog)).model
        guard case .success(let mapping) = InferredMigration.infer(from: model.versions[0], to: model.versions[1])
        else {
            Issue.record("the changes should be inferable")
            return
        }
        let flower = try #require(mapping.entities.first { $0.destination == "Flower" })
        #expect(flower.source == "Plant")
        #expect(flower.attributes == [.init(source: "name", destination: "name")])
        #expect(mapping.entities.first { $0.destination == "Living" }?.source == nil)
        #expect(mapping.removedEntities.isEmpty)
    }

    /// A mapping model that names no model versions is matched by its entity names; when those fit
    /// several pairs it is not taken for any, and lint says so.
    @Test func aMappingModelWithoutVersionPathsThatFitsSeveralPairsIsNamedAndNotUsed() throws {
        let scratch = try TemporaryDirectory()
        let bundle = try Self.writeBundle("Larder", in: scratch.url, Self.larder + [Self.larder[1]])
        let mapping = scratch.url.appending(path: "Tidy.xcmappingmodel")
        try FileManager.default.createDirectory(at: mapping, withIntermediateDirectories: true)
        try Data(
            """
            <?xml version="1.0" standalone="yes"?>
            <database>
                <object type="XDDEVMAPPINGMODEL" id="z1">
                    <relationship name="entitymappings" type="0/0" destination="XDDEVENTITYMAPPING" idrefs="z2"></relationship>
                </object>
                <object type="XDDEVENTITYMAPPING" id="z2">
                    <attribute name="sourcename" type="string">Item</attribute>
                    <attribute name="destinationname" type="string">Item</attribute>
                </object>
            </database>
            """.utf8
        ).write(to: mapping.appending(path: "xcmapping.xml"))
        let catalog = try Self.catalog(bundle, mappings: [mapping], at: scratch.url)
        let findings = try CatalogLint.findings(in: catalog)
        // Larder 1 → 2 stays an error (the mapping is not taken for it), and the mapping is named.
        #expect(findings.contains { $0.severity == .error && $0.message.contains("entity Item, attribute name") })
        #expect(
            findings.contains {
                $0.severity == .warning && $0.migration == "Tidy.xcmappingmodel"
                    && $0.message.contains("fit several pairs")
            }, "\(findings)")
    }
}
