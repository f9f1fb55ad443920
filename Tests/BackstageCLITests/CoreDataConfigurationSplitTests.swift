import BackstageTestSupport
import Foundation
import Testing

/// A Core Data app whose second model version parts its entities into two configurations: Synced
/// (Entry with its sub-entity VoiceEntry, Tag, many-to-many with Entry) and Device (Reminder,
/// Setting). `catalog init --model` gives that version one store per configuration and the plan
/// that reaches it from the one store of version 1 — Core Data's migration (Entry gains `mood`),
/// then the split by configuration — which keeps every row, each in its configuration's store,
/// each store a Core Data store of its own. Version 3 keeps the configurations (Reminder gains
/// `label`, Tag `color`): a Core Data migration of each configuration's store.
@Suite struct CoreDataConfigurationSplitTests {
    static func contents(version: Int) -> String {
        let configurations = """
                <configuration name="Synced">
                    <memberEntity name="Entry"/>
                    <memberEntity name="VoiceEntry"/>
                    <memberEntity name="Tag"/>
                </configuration>
                <configuration name="Device">
                    <memberEntity name="Reminder"/>
                    <memberEntity name="Setting"/>
                </configuration>
            """
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="\(version)">
                <entity name="Entry" syncable="YES">
                    <attribute name="text" optional="YES" attributeType="String"/>
                    <attribute name="written" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
                    \(version >= 2 ? #"<attribute name="mood" optional="YES" attributeType="String"/>"# : "")
                    <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="entries" inverseEntity="Tag"/>
                </entity>
                <entity name="Reminder" syncable="YES">
                    \(version >= 3 ? #"<attribute name="label" optional="YES" attributeType="String"/>"# : "")
                    <attribute name="hour" optional="YES" attributeType="Integer 16" defaultValueString="20" usesScalarValueType="YES"/>
                    <attribute name="weekdays" optional="YES" attributeType="Integer 16" defaultValueString="127" usesScalarValueType="YES"/>
                </entity>
                <entity name="Setting" syncable="YES">
                    <attribute name="key" optional="YES" attributeType="String"/>
                    <attribute name="value" optional="YES" attributeType="String"/>
                </entity>
                <entity name="Tag" syncable="YES">
                    \(version >= 3 ? #"<attribute name="color" optional="YES" attributeType="String"/>"# : "")
                    <attribute name="name" optional="YES" attributeType="String"/>
                    <relationship name="entries" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Entry" inverseName="tags" inverseEntity="Entry"/>
                </entity>
                <entity name="VoiceEntry" parentEntity="Entry" syncable="YES">
                    <attribute name="seconds" optional="YES" attributeType="Double" defaultValueString="0.0" usesScalarValueType="YES"/>
                </entity>
            \(version >= 2 ? configurations : "")
            </model>
            """
    }

    static func writeBundle(in folder: URL) throws {
        let versions = ["Journal", "Journal 2", "Journal 3"]
        try ModelBundle.write(
            "Journal",
            versions: versions.enumerated().map { ModelBundle.Version($1, contents: contents(version: $0 + 1)) },
            in: folder)
        try ModelBundle.writeCompiledModel(
            "Journal", entities: versions.map { ($0, ["Entry", "Reminder", "Setting", "Tag", "VoiceEntry"]) }, in: folder)
    }

    /// Tables, row counts and `Z_METADATA` of a store, read by Python's sqlite3.
    struct Store: Decodable {
        var tables: [String: Int]
        var uuid: String
        var plistUUID: String
        var identifiers: [String]
        var entities: [String]
        var integrity: String
    }

    static func read(_ store: URL) throws -> Store {
        let script = """
            import sqlite3, plistlib, json, sys
            c = sqlite3.connect(sys.argv[1])
            names = [r[0] for r in c.execute("select name from sqlite_master where type='table' and name not like 'sqlite_%'")]
            tables = {n: c.execute('select count(*) from "%s"' % n).fetchone()[0] for n in names}
            uuid, blob = c.execute("select Z_UUID, Z_PLIST from Z_METADATA").fetchone()
            plist = plistlib.loads(blob)
            entities = [r[0] for r in c.execute("select Z_NAME from Z_PRIMARYKEY order by Z_ENT")]
            print(json.dumps({"tables": tables, "uuid": uuid, "plistUUID": plist.get("NSStoreUUID", uuid),
                "identifiers": plist.get("NSStoreModelVersionIdentifiers", []), "entities": entities,
                "integrity": c.execute("pragma integrity_check").fetchone()[0]}))
            """
        let result = try PythonSQLite.run(script, [store.path])
        guard result.status == 0 else { throw CocoaError(.fileReadCorruptFile, userInfo: ["stderr": result.stderr]) }
        return try JSONDecoder().decode(Store.self, from: Data(result.stdout.utf8))
    }

    @Test(.timeLimit(.minutes(10)))
    func aVersionThatPartsItsEntitiesByConfigurationIsReachedByASplitThatKeepsEveryRow() throws {
        let scratch = try TemporaryDirectory()
        try Self.writeBundle(in: scratch.url)
        let made = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Journal", "--model", "Journal.xcdatamodeld", "--store",
                "applicationSupport/Journal.sqlite", "--momd", "Journal.momd", "--configuration-store",
                "Device=applicationSupport/Device/Device.sqlite",
            ], currentDirectory: scratch.url)
        #expect(made.status == 0, "\(made.stdout) \(made.stderr)")
        // The assumption no real store proves is said, not hidden.
        #expect(made.stderr.contains("put its entities in 2 stores"), "\(made.stderr)")
        let plan = try String(
            contentsOf: scratch.url.appending(path: "Journal/plans/Journal-to-Journal-2.json"), encoding: .utf8)
        #expect(plan.contains("\"coreDataMigration\"") && plan.contains("\"split\""), "\(plan)")
        let check = try runProcess(backstageExecutable, ["catalog", "check", "Journal"], currentDirectory: scratch.url)
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")

        let fixture = try runProcess(
            backstageExecutable, ["fixture", "app", "--catalog", "Journal", "--layout", "Journal", "--size", "1MB"],
            currentDirectory: scratch.url)
        #expect(fixture.status == 0, "\(fixture.stdout) \(fixture.stderr)")
        let support = scratch.url.appending(path: "app/Library/Application Support")
        let before = try Self.read(support.appending(path: "Journal.sqlite"))
        #expect(before.tables["ZENTRY", default: 0] > 0 && before.tables["ZREMINDER", default: 0] > 0)
        let join = try #require(before.tables.keys.first { $0.hasPrefix("Z_") && $0.hasSuffix("TAGS") })
        #expect(before.tables[join, default: 0] > 0, "join rows: \(before.tables)")

        let upgraded = try runProcess(
            backstageExecutable,
            ["upgrade", "app", "--plan", "Journal/plans/Journal-to-Journal-2.json"], currentDirectory: scratch.url)
        #expect(upgraded.status == 0, "\(upgraded.stdout) \(upgraded.stderr)")
        #expect(!FileManager.default.fileExists(atPath: support.appending(path: "Journal.sqlite").path))
        let synced = try Self.read(support.appending(path: "Synced.sqlite"))
        let device = try Self.read(support.appending(path: "Device/Device.sqlite"))
        #expect(Set(synced.tables.keys) == ["ZENTRY", "ZTAG", join, "Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"])
        #expect(Set(device.tables.keys) == ["ZREMINDER", "ZSETTING", "Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"])
        for table in ["ZENTRY", "ZTAG", join] { #expect(synced.tables[table] == before.tables[table], "\(table)") }
        for table in ["ZREMINDER", "ZSETTING"] { #expect(device.tables[table] == before.tables[table], "\(table)") }
        // Two Core Data stores, each of version 2, each its own UUID; the first keeps the store's.
        #expect(synced.identifiers == ["2"] && device.identifiers == ["2"])
        #expect(synced.uuid == before.uuid && synced.plistUUID == before.uuid)
        #expect(device.uuid != synced.uuid && device.plistUUID == device.uuid && device.uuid.count == 36)
        #expect(synced.entities == before.entities && device.entities == before.entities)
        #expect(synced.integrity == "ok" && device.integrity == "ok")

        // Version 3: each configuration's store migrated in place, its UUID kept.
        let next = try String(
            contentsOf: scratch.url.appending(path: "Journal/plans/Journal-2-to-Journal-3.json"), encoding: .utf8)
        #expect(next.components(separatedBy: "\"coreDataMigration\"").count == 3 && !next.contains("\"split\""))
        let third = try runProcess(
            backstageExecutable,
            ["upgrade", "app", "--plan", "Journal/plans/Journal-2-to-Journal-3.json"], currentDirectory: scratch.url)
        #expect(third.status == 0, "\(third.stdout) \(third.stderr)")
        let synced3 = try Self.read(support.appending(path: "Synced.sqlite"))
        let device3 = try Self.read(support.appending(path: "Device/Device.sqlite"))
        #expect(synced3.identifiers == ["3"] && device3.identifiers == ["3"])
        #expect(synced3.uuid == synced.uuid && device3.uuid == device.uuid)
        #expect(synced3.tables == synced.tables && device3.tables == device.tables, "every row kept")
        #expect(synced3.integrity == "ok" && device3.integrity == "ok")

        let simulated = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "Journal", "--from", "Journal", "--to", "Journal-3", "--sizes", "1MB",
                "--states", "clean", "--crash-points", "12", "--power-loss", "--power-cuts", "4", "--json",
            ], currentDirectory: scratch.url)
        #expect(simulated.status == 0, "\(simulated.stdout.suffix(3000)) \(simulated.stderr)")
        let summary = try JSONDecoder().decode(SimulateSummary.self, from: Data(simulated.stdout.utf8))
        #expect(summary.passed)
        #expect(summary.runs.contains { $0.crashed && $0.crashPoint?.hasPrefix("split") == true }, "killed in the split")
        #expect(summary.runs.filter { $0.crashed && $0.crashPoint?.hasPrefix("coreDataMigration") == true }.count >= 2)

        // From the configuration stores, each entity's rows and values followed into its store; also
        // from a Journal 2 whose upgrade into it was killed half way through Core Data's migration.
        let fromStores = try runProcess(
            backstageExecutable,
            [
                "simulate", "--catalog", "Journal", "--from", "Journal-2", "--to", "Journal-3", "--sizes", "1MB",
                "--states", "clean,interrupted", "--crash-points", "4", "--json",
            ], currentDirectory: scratch.url)
        #expect(fromStores.status == 0, "\(fromStores.stdout.suffix(3000)) \(fromStores.stderr)")
        // Each crash point fired, the interrupted state's too: its upgrade into Journal 2 is finished
        // by the plan into it (given only the plan out of it, every step was skipped as a fresh
        // install and no row was checked).
        let resumed = try JSONDecoder().decode(SimulateSummary.self, from: Data(fromStores.stdout.utf8))
        #expect(resumed.runs.count == 8 && resumed.runs.allSatisfy(\.crashed), "\(resumed.runs)")

        // A migration of one configuration's store that changes values, or one left out, is found.
        let planFile = scratch.url.appending(path: "Journal/plans/Journal-2-to-Journal-3.json")
        let pristine = try Data(contentsOf: planFile)
        var tampered = try #require(try JSONSerialization.jsonObject(with: pristine) as? [String: Any])
        var steps = try #require(tampered["steps"] as? [[String: Any]])
        let deviceStep = try #require(
            steps.firstIndex { ($0["coreDataMigration"] as? [String: Any])?["store"] as? String == "applicationSupport/Device/Device.sqlite" })
        var step = try #require(steps[deviceStep]["coreDataMigration"] as? [String: Any])
        var program = try #require(step["program"] as? [String: Any])
        var statements = try #require(program["statements"] as? [Any])
        statements.insert(["sql": ["_0": "UPDATE ZREMINDER SET ZHOUR = ZHOUR + 1"]], at: statements.count - 1)
        program["statements"] = statements
        step["program"] = program
        steps[deviceStep]["coreDataMigration"] = step
        tampered["steps"] = steps
        try JSONSerialization.data(withJSONObject: tampered).write(to: planFile)
        let arguments = [
            "simulate", "--catalog", "Journal", "--from", "Journal-2", "--to", "Journal-3", "--sizes", "300KB",
            "--states", "clean", "--crash-points", "none",
        ]
        let changed = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
        #expect(changed.status != 0 && changed.stdout.contains("values changed: Reminder.hour"), "\(changed.stdout)")
        steps.remove(at: deviceStep)
        tampered["steps"] = steps
        try JSONSerialization.data(withJSONObject: tampered).write(to: planFile)
        let left = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
        #expect(left.status != 0 && left.stdout.contains("applicationSupport/Device/Device.sqlite: "), "\(left.stdout)")
    }
}
