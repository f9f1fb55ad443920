import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// `--expect`'s comparison of an upgraded schema with a fresh install's: what SQLite's pragmas do
/// not tell (AUTOINCREMENT, CHECK constraints, generated columns' expressions) is compared too.
@Suite struct SchemaComparisonTests {
    static func differences(fresh: String, upgraded: String) throws -> [String] {
        let scratch = try TemporaryDirectory()
        let freshURL = scratch.url.appending(path: "fresh.sql")
        let upgradedURL = scratch.url.appending(path: "upgraded.sql")
        try Data(fresh.utf8).write(to: freshURL)
        try Data(upgraded.utf8).write(to: upgradedURL)
        let expected = try SchemaDescription(contentsOf: freshURL)
        return expected.differences(from: try SchemaDescription(contentsOf: upgradedURL)).map(\.description)
    }

    @Test func aLostAutoincrementIsADifference() throws {
        let fresh = "CREATE TABLE workout(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT);"
        #expect(
            try Self.differences(fresh: fresh, upgraded: "CREATE TABLE workout(id INTEGER PRIMARY KEY, name TEXT);")
                == ["table workout: AUTOINCREMENT in a fresh install only"])
        #expect(
            try Self.differences(
                fresh: fresh, upgraded: "CREATE TABLE workout(id integer primary key autoincrement, name text);"
            ).isEmpty)
    }

    @Test func aCheckCarriedOverByAlterTableEqualsTheOneAFreshInstallDeclares() throws {
        let upgraded =
            "CREATE TABLE workout(id INTEGER PRIMARY KEY, minutes INTEGER); ALTER TABLE workout ADD COLUMN kcal INTEGER CHECK (kcal >= 0);"
        let asTable =
            "CREATE TABLE workout(id INTEGER PRIMARY KEY, minutes INTEGER, kcal INTEGER, CONSTRAINT kcal_positive CHECK((kcal>=0)));"
        let asColumn = "CREATE TABLE workout(id INTEGER PRIMARY KEY, minutes INTEGER, kcal INTEGER CHECK(kcal >= 0));"
        #expect(try Self.differences(fresh: asTable, upgraded: upgraded).isEmpty)
        #expect(try Self.differences(fresh: asColumn, upgraded: upgraded).isEmpty)
    }

    @Test func aChangedOrMissingCheckIsADifference() throws {
        let fresh = "CREATE TABLE workout(id INTEGER PRIMARY KEY, kcal INTEGER CHECK (kcal >= 0));"
        #expect(
            try Self.differences(
                fresh: fresh, upgraded: "CREATE TABLE workout(id INTEGER PRIMARY KEY, kcal INTEGER CHECK (kcal > 0));")
                == [
                    "table workout: CHECK (kcal >= 0) missing from the upgraded store",
                    "table workout: CHECK (kcal > 0) only in the upgraded store",
                ])
        #expect(
            try Self.differences(fresh: fresh, upgraded: "CREATE TABLE workout(id INTEGER PRIMARY KEY, kcal INTEGER);")
                == ["table workout: CHECK (kcal >= 0) missing from the upgraded store"])
    }

    @Test func aChangedGeneratedExpressionIsADifference() throws {
        let table =
            "CREATE TABLE workout(id INTEGER PRIMARY KEY, minutes INTEGER, seconds INTEGER GENERATED ALWAYS AS (minutes * %@) VIRTUAL);"
        let differences = try Self.differences(fresh: String(format: table, "60"), upgraded: String(format: table, "6"))
        #expect(
            differences == [
                "table workout: column seconds: generated as `minutes * 60` in a fresh install, `minutes * 6` in the upgraded store"
            ])
        let respelled = table.replacingOccurrences(of: "(minutes * %@)", with: "((MINUTES*%@))")
        #expect(
            try Self.differences(fresh: String(format: table, "60"), upgraded: String(format: respelled, "60")).isEmpty)
    }
}
