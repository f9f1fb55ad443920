import BackstageTestSupport
import Foundation
import Testing

/// `fixture` on a catalog made from a Core Data model keeps Core Data's invariants, as Python's
/// sqlite3 reads the store: the recipe model of ``CoreDataModelCommandTests`` has an abstract Item
/// (Ingredient and Recipe under it), to-one keys (Step.recipe, Recipe.author, Cook.favourite into
/// the Item hierarchy with its entity column), to-manys and a many-to-many (Recipe.tags ↔ Tag.recipes).
@Suite struct CoreDataFixtureCommandTests {
    @Test(.timeLimit(.minutes(10)))
    func aModelsFixtureKeepsEntitiesKeysAndReferencesAsCoreDataDoes() throws {
        let scratch = try TemporaryDirectory()
        try CoreDataModelCommandTests.writeBundle(in: scratch.url)
        let made = try runProcess(
            backstageExecutable,
            ["catalog", "init", "Recipes", "--model", "Recipes.xcdatamodeld", "--store", "documents/Recipes.sqlite"],
            currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stderr)")
        let fixture = try runProcess(
            backstageExecutable,
            ["fixture", "out", "--catalog", "Recipes", "--layout", "Recipes-2", "--size", "200KB", "--seed", "3"],
            currentDirectory: scratch.url)
        #expect(fixture.status == 0, "\(fixture.stdout) \(fixture.stderr)")
        let read = try PythonSQLite.run(
            """
            import sqlite3, sys, json
            c = sqlite3.connect(sys.argv[1])
            one = lambda sql: c.execute(sql).fetchone()[0]
            entities = {ent: (name, sup) for ent, name, sup, _ in c.execute("select * from Z_PRIMARYKEY")}
            def family(ent):
                found = [ent]
                for e, (_, sup) in entities.items():
                    if sup == ent: found += family(e)
                return found
            abstract = {2}
            tables = {"ZCOOK": 1, "ZITEM": 2, "ZSTEP": 5, "ZTAG": 6}
            bad_ent = {t: one("select count(*) from %s where Z_ENT not in (%s)" % (t, ",".join(
                str(e) for e in family(root) if e not in abstract))) for t, root in tables.items()}
            below_max = sum(one("select count(*) from %s where Z_ENT = %d and Z_PK > %d" % (t, e, one(
                "select Z_MAX from Z_PRIMARYKEY where Z_ENT = %d" % e)))
                for t, root in tables.items() for e in family(root))
            def dangling(table, column, target, ents, owners):
                return one(("select count(*) from %s where %s is not null and (Z_ENT not in (%s) or %s not in "
                    "(select Z_PK from %s where Z_ENT in (%s)))") % (table, column, owners, column, target, ents))
            print(json.dumps({
                "items": [list(r) for r in c.execute("select Z_ENT, count(*) from ZITEM group by Z_ENT")],
                "badEntity": bad_ent, "keysAboveZMax": below_max,
                "stepRecipe": [dangling("ZSTEP", "ZRECIPE", "ZITEM", "4", "5"),
                               one("select count(*) from ZSTEP where ZRECIPE is not null")],
                "recipeAuthor": [dangling("ZITEM", "ZAUTHOR", "ZCOOK", "1", "4"),
                                 one("select count(*) from ZITEM where ZAUTHOR is not null")],
                "favourite": [dangling("ZCOOK", "ZFAVOURITE", "ZITEM", "3,4", "1"),
                              one("select count(*) from ZCOOK where ZFAVOURITE is not null")],
                "favouriteEntityDisagrees": one("select count(*) from ZCOOK c where ZFAVOURITE is not null and "
                    "Z2_FAVOURITE is not (select Z_ENT from ZITEM where Z_PK = c.ZFAVOURITE)"),
                "join": [one("select count(*) from Z_4TAGS where Z_4RECIPES not in (select Z_PK from ZITEM where "
                             "Z_ENT = 4) or Z_6TAGS not in (select Z_PK from ZTAG)"), one("select count(*) from Z_4TAGS")],
                "integrity": one("pragma integrity_check"),
            }))
            """, [scratch.url.appending(path: "out/Library/Application Support/Recipes.sqlite").path])
        #expect(read.status == 0, "\(read.stderr)")
        struct Read: Decodable {
            var items: [[Int]]
            var badEntity: [String: Int]
            var keysAboveZMax: Int
            var stepRecipe: [Int]
            var recipeAuthor: [Int]
            var favourite: [Int]
            var favouriteEntityDisagrees: Int
            var join: [Int]
            var integrity: String
        }
        let store = try JSONDecoder().decode(Read.self, from: Data(read.stdout.utf8))
        // No row is an abstract Item; both concrete sub-entities have rows.
        #expect(store.items.map { $0[0] } == [3, 4], "\(store.items)")
        #expect(store.badEntity.values.allSatisfy { $0 == 0 }, "\(store.badEntity)")
        #expect(store.keysAboveZMax == 0)
        // Every to-one key reaches a live row of its entity (and some do reach one).
        for (name, pair) in [("Step.recipe", store.stepRecipe), ("Recipe.author", store.recipeAuthor),
            ("Cook.favourite", store.favourite)]
        {
            #expect(pair[0] == 0 && pair[1] > 0, "\(name): \(pair[0]) dangling of \(pair[1])")
        }
        #expect(store.favouriteEntityDisagrees == 0)
        #expect(store.join[0] == 0 && store.join[1] > 0, "Z_4TAGS: \(store.join)")
        #expect(store.integrity == "ok")
    }
}
