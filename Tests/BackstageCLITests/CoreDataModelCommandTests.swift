import BackstageTestSupport
import Foundation
import Testing

/// `catalog init --model`: a catalog made from an app's Core Data model bundle, then shown and
/// used for fixtures, as a user runs it.
@Suite struct CoreDataModelCommandTests {
    /// A recipe app's model: an abstract Item with two sub-entities, a to-many (Cook.recipes), an
    /// ordered to-many (Recipe.steps), a many-to-many (Recipe.tags ↔ Tag.recipes), a to-one whose
    /// destination has sub-entities (Cook.favourite), a fetch index and a uniqueness constraint.
    /// Version 2 adds Recipe.rating.
    static func contents(version: Int) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="\(version)">
            <entity name="Cook" representedClassName="Cook" syncable="YES">
                <attribute name="name" attributeType="String"/>
                <relationship name="favourite" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Item"/>
                <relationship name="recipes" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Recipe" inverseName="author" inverseEntity="Recipe"/>
            </entity>
            <entity name="Item" isAbstract="YES" syncable="YES">
                <attribute name="created" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
                <attribute name="name" optional="YES" attributeType="String"/>
            </entity>
            <entity name="Ingredient" parentEntity="Item" syncable="YES">
                <attribute name="grams" optional="YES" attributeType="Double" defaultValueString="0.0" usesScalarValueType="YES"/>
            </entity>
            <entity name="Recipe" parentEntity="Item" representedClassName="Recipe" syncable="YES">
                <attribute name="photo" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
                \(version >= 2 ? #"<attribute name="rating" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>"# : "")
                <attribute name="servings" attributeType="Integer 16" defaultValueString="2" usesScalarValueType="YES"/>
                <relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Cook" inverseName="recipes" inverseEntity="Cook"/>
                <relationship name="steps" optional="YES" toMany="YES" ordered="YES" deletionRule="Cascade" destinationEntity="Step" inverseName="recipe" inverseEntity="Step"/>
                <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="recipes" inverseEntity="Tag"/>
                <fetchIndex name="byServings">
                    <fetchIndexElement property="servings" type="Binary" order="ascending"/>
                </fetchIndex>
            </entity>
            <entity name="Step" syncable="YES">
                <attribute name="text" attributeType="String"/>
                <relationship name="recipe" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Recipe" inverseName="steps" inverseEntity="Recipe"/>
            </entity>
            <entity name="Tag" syncable="YES">
                <attribute name="label" attributeType="String"/>
                <relationship name="recipes" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Recipe" inverseName="tags" inverseEntity="Recipe"/>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="label"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
            <elements>
                <element name="Cook" positionX="0" positionY="0" width="128" height="74"/>
            </elements>
        </model>
        """
    }

    /// Writes `Recipes.xcdatamodeld` (versions `Recipes` and `Recipes 2`, the current one) in `folder`.
    static func writeBundle(in folder: URL) throws {
        try ModelBundle.write(
            "Recipes",
            versions: [
                ModelBundle.Version("Recipes", contents: contents(version: 1)),
                ModelBundle.Version("Recipes 2", contents: contents(version: 2)),
            ], current: "Recipes 2", in: folder)
    }

    /// The statements Core Data's conventions give for version 2 (entities: Cook 1, Item 2,
    /// Ingredient 3, Recipe 4, Step 5, Tag 6).
    static let expectedVersion2 = [
        "CREATE TABLE ZCOOK ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFAVOURITE INTEGER, Z2_FAVOURITE INTEGER, ZNAME VARCHAR )",
        "CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZRATING INTEGER, ZSERVINGS INTEGER, ZAUTHOR INTEGER, ZCREATED TIMESTAMP, ZGRAMS FLOAT, ZNAME VARCHAR, ZPHOTO BLOB )",
        "CREATE TABLE ZSTEP ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZRECIPE INTEGER, Z_FOK_RECIPE INTEGER, ZTEXT VARCHAR )",
        "CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZLABEL VARCHAR )",
        "CREATE TABLE Z_4TAGS ( Z_4RECIPES INTEGER, Z_6TAGS INTEGER, PRIMARY KEY (Z_4RECIPES, Z_6TAGS) )",
        "CREATE INDEX ZCOOK_ZFAVOURITE_INDEX ON ZCOOK (ZFAVOURITE)",
        "CREATE INDEX ZITEM_ZAUTHOR_INDEX ON ZITEM (ZAUTHOR)",
        "CREATE INDEX ZITEM_Z_ENT_INDEX ON ZITEM (Z_ENT)",
        "CREATE INDEX Z_Recipe_byServings ON ZITEM (ZSERVINGS COLLATE BINARY ASC)",
        "CREATE INDEX ZSTEP_ZRECIPE_INDEX ON ZSTEP (ZRECIPE)",
        "CREATE UNIQUE INDEX Z_Tag_UNIQUE_label ON ZTAG (ZLABEL COLLATE BINARY ASC)",
        "CREATE INDEX Z_4TAGS_Z_6TAGS_INDEX ON Z_4TAGS (Z_6TAGS, Z_4RECIPES)",
        "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)",
        "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)",
        "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)",
    ]

    struct Shown: Decodable {
        struct Manifest: Decodable {
            struct Version: Decodable {
                struct Store: Decodable { var location: String; var schema: String }
                var name: String
                var plan: String?
                var stores: [Store]
            }
            var app: String
            var versions: [Version]
        }
        struct Schema: Decodable {
            struct Object: Decodable { var sql: String }
            var objects: [Object]
        }
        var manifest: Manifest
        var schemas: [String: Schema]
    }

    @Test(.timeLimit(.minutes(10)))
    func aCatalogMadeFromAModelHasEachVersionsStoreAndItsFixturesThatSchema() throws {
        let scratch = try TemporaryDirectory()
        try Self.writeBundle(in: scratch.url)
        let made = try runProcess(
            backstageExecutable,
            ["catalog", "init", "Recipes", "--model", "Recipes.xcdatamodeld", "--store", "documents/Recipes.sqlite"],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("Recipes: 2 version(s)"), "\(made.stdout)")

        let shown = try runProcess(backstageExecutable, ["catalog", "show", "Recipes", "--json"], currentDirectory: scratch.url)
        #expect(shown.status == 0, "\(shown.stderr)")
        let catalog = try JSONDecoder().decode(Shown.self, from: Data(shown.stdout.utf8))
        // Named as Xcode names the versions ("Recipes 2" with its space made '-'), in order.
        #expect(catalog.manifest.versions.map(\.name) == ["Recipes", "Recipes-2"])
        // The store where the app has kept it, then, in the newest version, out of Documents.
        #expect(
            catalog.manifest.versions.map { $0.stores.map(\.location) } == [
                ["documents/Recipes.sqlite"], ["applicationSupport/Recipes.sqlite"],
            ])
        #expect(
            made.stderr.contains(
                "warning: Recipes 2, the newest version, keeps its store at applicationSupport/Recipes.sqlite, out of "
                    + "Documents: the upgrade to it relocates documents/Recipes.sqlite there first"), "\(made.stderr)")
        // The first has no plan; the second is reached by a relocation, Core Data's migration and a quarantine.
        #expect(catalog.manifest.versions.map(\.plan) == [nil, "plans/Recipes-to-Recipes-2.json"])
        let plan = try JSONSerialization.jsonObject(
            with: Data(contentsOf: scratch.url.appending(path: "Recipes/plans/Recipes-to-Recipes-2.json")))
        let steps = try #require((plan as? [String: Any])?["steps"] as? [[String: Any]])
        #expect(steps.map { $0.keys.sorted() } == [["relocate"], ["coreDataMigration"], ["quarantine"]])
        let second = try #require(catalog.manifest.versions.last?.stores.first)
        let statements = try #require(catalog.schemas[second.schema]).objects.map(\.sql)
        #expect(statements == Self.expectedVersion2)
        let first = try #require(catalog.manifest.versions.first?.stores.first)
        #expect(try #require(catalog.schemas[first.schema]).objects.map(\.sql).contains(
            "CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZSERVINGS INTEGER, ZAUTHOR INTEGER, ZCREATED TIMESTAMP, ZGRAMS FLOAT, ZNAME VARCHAR, ZPHOTO BLOB )"))

        let fixture = try runProcess(
            backstageExecutable,
            ["fixture", "out", "--catalog", "Recipes", "--layout", "Recipes-2", "--size", "100KB", "--seed", "3"],
            currentDirectory: scratch.url)
        #expect(fixture.status == 0, "\(fixture.stdout) \(fixture.stderr)")
        let store = scratch.url.appending(path: "out/Library/Application Support/Recipes.sqlite")
        let read = try PythonSQLite.run(
            """
            import sqlite3, sys, json
            c = sqlite3.connect(sys.argv[1])
            print(json.dumps({
                "sql": [s for (s,) in c.execute("select sql from sqlite_master where sql is not null order by rowid")],
                "entities": [list(r) for r in c.execute("select Z_ENT, Z_NAME, Z_SUPER from Z_PRIMARYKEY order by Z_ENT")],
                "recipes": c.execute("select count(*) from ZITEM").fetchone()[0],
                "identifiers": __import__("plistlib").loads(c.execute("select Z_PLIST from Z_METADATA").fetchone()[0])["NSStoreModelVersionIdentifiers"],
            }))
            """, [store.path])
        #expect(read.status == 0, "\(read.stderr)")
        struct Store: Decodable {
            var sql: [String]
            var entities: [[Value]]
            var recipes: Int
            var identifiers: [String]
        }
        let written = try JSONDecoder().decode(Store.self, from: Data(read.stdout.utf8))
        #expect(Set(written.sql) == Set(Self.expectedVersion2))
        #expect(written.entities == [
            [.int(1), .text("Cook"), .int(0)], [.int(2), .text("Item"), .int(0)], [.int(3), .text("Ingredient"), .int(2)],
            [.int(4), .text("Recipe"), .int(2)], [.int(5), .text("Step"), .int(0)], [.int(6), .text("Tag"), .int(0)],
        ])
        #expect(written.recipes > 0)
        #expect(written.identifiers == ["2"])

        // The second version's plan lacks the version hashes of the entities in a hierarchy: check says so, naming it.
        let checked = try runProcess(backstageExecutable, ["catalog", "check", "Recipes"], currentDirectory: scratch.url)
        #expect(checked.status == 1)
        #expect(
            checked.stdout.contains("Recipes-2: ")
                && checked.stdout.contains("the version hashes of Cook, Ingredient, Item, Recipe, Tag are not known"),
            "\(checked.stdout)")
    }

    enum Value: Decodable, Equatable {
        case int(Int), text(String)
        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int.self) { self = .int(value) } else { self = .text(try container.decode(String.self)) }
        }
    }

    /// mwkirk's real bundle (copied from `../shared/coredata-models`): its `.xccurrentversion` names
    /// the first of three versions. The catalog keeps the versions in order and says so.
    @Test func aCurrentVersionThatIsNotTheNewestIsWarnedAboutAndNothingIsReordered() throws {
        let shared = SharedStores.folder.deletingLastPathComponent().appending(path: "coredata-models/mwkirk")
        guard FileManager.default.fileExists(atPath: shared.path) else {
            print("skipped: no \(shared.path) (the shared Core Data models sit beside the project)")
            return
        }
        let scratch = try TemporaryDirectory()
        try shell("cp -R '\(shared.path)' '\(scratch.url.path)/mwkirk' && chmod -R u+w '\(scratch.url.path)/mwkirk'")
        let made = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Employees", "--model", "mwkirk/MWKCoreDataTests.xcdatamodeld", "--store",
                "applicationSupport/MWKCoreDataTests.sqlite",
            ], currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(
            made.stderr.contains(
                "warning: MWKCoreDataTests.xcdatamodeld: .xccurrentversion names MWKCoreDataTests, not the newest version MWKCoreDataTests3"
            ), "\(made.stderr)")
        let shown = try runProcess(backstageExecutable, ["catalog", "show", "Employees"], currentDirectory: scratch.url)
        let versions = shown.stdout.split(separator: "\n").filter { $0.hasPrefix("  MWK") }
        #expect(versions.count == 3, "\(shown.stdout)")
        #expect(versions.first?.contains(#"MWKCoreDataTests: Core Data model version "MWKCoreDataTests" of MWKCoreDataTests.xcdatamodeld (current"#) == true)
        #expect(versions.last?.hasPrefix("  MWKCoreDataTests3:") == true)
    }

    @Test func aModelWithoutStoreLocationIsAUsageError() throws {
        let scratch = try TemporaryDirectory()
        try Self.writeBundle(in: scratch.url)
        let refused = try runProcess(
            backstageExecutable, ["catalog", "init", "Recipes", "--model", "Recipes.xcdatamodeld"],
            currentDirectory: scratch.url)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--store"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.url.appending(path: "Recipes").path))
    }
}
