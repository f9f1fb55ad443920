import BackstageTestSupport
import Foundation
import Testing

/// `catalog lint` and `inspect` on a catalog made from a Core Data model, as a user runs them.
@Suite struct CoreDataLintCommandTests {
    static let shared = SharedStores.folder.deletingLastPathComponent().appending(path: "coredata-models")

    /// Writes `Shop.xcdatamodeld`: version 2 turns Product.price from String into Binary.
    static func writeShop(in folder: URL) throws {
        let product = { (type: String) in
            #"<entity name="Product"><attribute name="price" optional="YES" attributeType="\#(type)"/></entity>"#
        }
        try ModelBundle.write(
            "Shop", versions: ModelBundle.numbered("Shop", [product("String"), product("Binary")], identifiers: false),
            in: folder)
    }

    @Test(.timeLimit(.minutes(10)))
    func lintNamesTheUninferableChangeAndFailsAndCheckRefusesIt() throws {
        let scratch = try TemporaryDirectory()
        try Self.writeShop(in: scratch.url)
        let made = try runProcess(
            backstageExecutable,
            ["catalog", "init", "Shop", "--model", "Shop.xcdatamodeld", "--store", "documents/Shop.sqlite"],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        let lint = try runProcess(backstageExecutable, ["catalog", "lint", "Shop"], currentDirectory: scratch.url)
        #expect(lint.status == 1, "\(lint.stdout) \(lint.stderr)")
        #expect(
            lint.stdout.contains(
                "Shop-2: error: applicationSupport/Shop.sqlite, migration lightweight, table ZPRODUCT: model version Shop → "
                    + "Shop 2, entity Product, attribute price: its type changes from String to Binary"),
            "\(lint.stdout)")
        let check = try runProcess(backstageExecutable, ["catalog", "check", "Shop"], currentDirectory: scratch.url)
        #expect(check.status == 1)
        #expect(check.stdout.contains("entity Product, attribute price"), "\(check.stdout)")
    }

    /// Writes `Pantry.xcdatamodeld`: an ordered to-many (whose version hashes no real store proves),
    /// version 2 adding an optional attribute, version 3 turning Jar.label from String into Integer 64.
    static func writePantry(in folder: URL) throws {
        let grams = #"<attribute name="grams" optional="YES" attributeType="Double"/>"#
        let bodies = [("", "String"), (grams, "String"), (grams, "Integer 64")].map { extra, labelType in
            """
                <entity name="Jar">
                    <attribute name="label" optional="YES" attributeType="\(labelType)"/>
                    <relationship name="beans" optional="YES" toMany="YES" ordered="YES" destinationEntity="Bean" inverseName="jar" inverseEntity="Bean"/>
                </entity>
                <entity name="Bean">
                    <attribute name="color" optional="YES" attributeType="String"/>\(extra)
                    <relationship name="jar" optional="YES" maxCount="1" destinationEntity="Jar" inverseName="beans" inverseEntity="Jar"/>
                </entity>
            """
        }
        try ModelBundle.write("Pantry", versions: ModelBundle.numbered("Pantry", bodies, identifiers: false), in: folder)
    }

    @Test(.timeLimit(.minutes(10)))
    func lintOfAModelWhoseVersionHashesAreUnknownStillNamesWhatCoreDataCannotInfer() throws {
        let scratch = try TemporaryDirectory()
        try Self.writePantry(in: scratch.url)
        let made = try runProcess(
            backstageExecutable,
            ["catalog", "init", "Pantry", "--model", "Pantry.xcdatamodeld", "--store", "documents/Pantry.sqlite"],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        // Not "cannot be read" (3): the missing hashes are said, the uninferable change too.
        let lint = try runProcess(backstageExecutable, ["catalog", "lint", "Pantry"], currentDirectory: scratch.url)
        #expect(lint.status == 1, "\(lint.stdout) \(lint.stderr)")
        let lines = lint.stdout.split(separator: "\n").map(String.init)
        #expect(
            lines.contains {
                $0.hasPrefix(
                    "Pantry-2: warning: documents/Pantry.sqlite, migration coreDataMigration Pantry → Pantry 2: ")
                    && $0.contains("the version hashes of Jar are not known")
                    && $0.contains("upgrade refuses plans/Pantry-to-Pantry-2.json until they are given")
            }, "\(lint.stdout)")
        #expect(
            lines.contains {
                $0.hasPrefix("Pantry-3: error: applicationSupport/Pantry.sqlite, migration lightweight, table ZJAR: ")
                    && $0.contains("model version Pantry 2 → Pantry 3, entity Jar, attribute label")
            }, "\(lint.stdout)")
        #expect(lint.stderr.isEmpty, "\(lint.stderr)")

        // fixture: the catalog's first version by default; a version whose plan is refused is made
        // from its own schema, and said to lack what the app's Core Data needs.
        let first = try runProcess(
            backstageExecutable, ["fixture", "first", "--catalog", "Pantry", "--size", "100KB"],
            currentDirectory: scratch.url)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.hasPrefix("Pantry container"), "\(first.stdout)")
        let second = try runProcess(
            backstageExecutable, ["fixture", "second", "--catalog", "Pantry", "--layout", "Pantry-2", "--size", "100KB"],
            currentDirectory: scratch.url)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(
            second.stderr.contains("warning: Pantry-2's plan is refused (the version hashes of Jar are not known")
                && second.stderr.contains("without NSStoreModelVersionHashes"), "\(second.stderr)")
    }

    @Test(.timeLimit(.minutes(10)))
    func aCapturedRealStoreIsInTheVersionThatWroteItAndInspectNamesThatVersion() throws {
        let project = Self.shared.appending(path: "wibosco")
        guard FileManager.default.fileExists(atPath: project.path) else {
            print("skipped: no \(project.path) (the shared Core Data models sit beside the project)")
            return
        }
        let scratch = try TemporaryDirectory()
        try shell("cp -R '\(project.path)' '\(scratch.url.path)/wibosco' && chmod -R u+w '\(scratch.url.path)/wibosco'")
        let made = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Posts", "--model", "wibosco/CoreDataMigration_Example.xcdatamodeld", "--store",
                "documents/Posts.sqlite", "--mapping", "wibosco/mappings/Migration1to2.xcmappingmodel", "--mapping",
                "wibosco/mappings/Migration2to3.xcmappingmodel", "--from",
                "wibosco/stores/CoreDataMigration_Example_2.sqlite",
            ],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stderr.contains("into version CoreDataMigration_Example-2"), "\(made.stderr)")
        let lint = try runProcess(backstageExecutable, ["catalog", "lint", "Posts"], currentDirectory: scratch.url)
        #expect(lint.status == 0, "\(lint.stdout) \(lint.stderr)")
        #expect(lint.stdout.contains("Post2ToPost3MigrationPolicy"), "\(lint.stdout)")

        let inspected = try runProcess(
            backstageExecutable,
            ["inspect", "wibosco/stores/CoreDataMigration_Example_3.sqlite", "--catalog", "Posts"],
            currentDirectory: scratch.url)
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(
            inspected.stdout.contains("Core Data model: written by version CoreDataMigration_Example-3 (its schema)"),
            "\(inspected.stdout)")
        // The captured store is known by its version hashes now.
        let second = try runProcess(
            backstageExecutable,
            ["inspect", "wibosco/stores/CoreDataMigration_Example_2.sqlite", "--catalog", "Posts"],
            currentDirectory: scratch.url)
        #expect(
            second.stdout.contains("written by version CoreDataMigration_Example-2 (its Z_METADATA version hashes)"),
            "\(second.stdout)")
    }

    /// `--omit-missing-hashes` holds for a plan given with `--plan` as for the catalog's own: the
    /// candidate plan of a model whose version hashes are unknown is simulated, not refused.
    @Test(.timeLimit(.minutes(10)))
    func omitMissingHashesHoldsForAPlanGivenOnTheCommandLine() throws {
        let scratch = try TemporaryDirectory()
        try Self.writePantry(in: scratch.url)
        let made = try runProcess(
            backstageExecutable,
            ["catalog", "init", "Pantry", "--model", "Pantry.xcdatamodeld", "--store", "documents/Pantry.sqlite"],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        let candidate = scratch.url.appending(path: "candidate.json")
        try FileManager.default.copyItem(
            at: scratch.url.appending(path: "Pantry/plans/Pantry-to-Pantry-2.json"), to: candidate)
        let run = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "Pantry", "--from", "Pantry", "--to", "Pantry-2", "--plan", candidate.path,
                "--omit-missing-hashes", "--sizes", "150KB", "--states", "clean", "--crash-points", "none",
            ], currentDirectory: scratch.url)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("1 runs, 1 passed"), "\(run.stdout)")
    }
}
