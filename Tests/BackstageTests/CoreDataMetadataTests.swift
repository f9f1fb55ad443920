import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The `Z_METADATA` plist a Core Data migration writes: the destination's identifiers and hashes,
/// every other key as the store had it, each with its own plist type, read back by Python's plistlib.
@Suite struct CoreDataMetadataTests {
    @Test func theRewrittenPlistKeepsEveryOtherKeyWithItsType() throws {
        let folder = try TemporaryDirectory()
        let source = folder.url.appending(path: "source.plist")
        let written = try PythonSQLite.run(
            """
            import plistlib, sys, datetime
            plist = {"NSStoreType": "SQLite", "NSPersistenceFrameworkVersion": 1344, "NSAutoVacuumLevel": "2",
                "NSStoreModelVersionHashesVersion": 3, "NSStoreModelVersionIdentifiers": [""],
                "NSStoreModelVersionHashes": {"Post": b"\\x01" * 32}, "NSStoreModelVersionChecksumKey": "abc=",
                "appFlag": True, "appOff": False, "appRatio": 1.0, "appHalf": 0.5, "appBig": 2 ** 40, "appNegative": -7,
                "appWhen": datetime.datetime(2024, 5, 6, 7, 8, 9), "appEmpty": b"", "appList": ["a", 1, True, [], {}],
                "appNested": {"deeper": {"blob": b"xyz", "list": [2.5]}}}
            open(sys.argv[1], "wb").write(plistlib.dumps(plist, fmt=plistlib.FMT_BINARY))
            """, [source.path])
        #expect(written.status == 0, "\(written.stderr)")

        let hashes = ["Color": Data(repeating: 2, count: 32), "Post": Data(repeating: 3, count: 32)]
        let rewritten = try CoreDataMigrationProgram.rewrittenMetadataPlist(
            try Data(contentsOf: source),
            with: .init(versionIdentifiers: ["4"], versionHashes: hashes, versionHashesSource: .compiledModel))
        let output = folder.url.appending(path: "rewritten.plist")
        try rewritten.write(to: output)

        let compared = try PythonSQLite.run(
            """
            import plistlib, sys
            def typed(value):
                if isinstance(value, dict): return {k: typed(v) for k, v in value.items()}
                if isinstance(value, list): return [typed(v) for v in value]
                return [type(value).__name__, value]
            before = plistlib.load(open(sys.argv[1], "rb"))
            after = plistlib.load(open(sys.argv[2], "rb"))
            assert open(sys.argv[2], "rb").read(8) == b"bplist00", "not a binary plist"
            assert after["NSStoreModelVersionIdentifiers"] == ["4"], after["NSStoreModelVersionIdentifiers"]
            assert after["NSStoreModelVersionHashes"] == {"Color": b"\\x02" * 32, "Post": b"\\x03" * 32}
            assert "NSStoreModelVersionChecksumKey" not in after
            for key in ("NSStoreModelVersionIdentifiers", "NSStoreModelVersionHashes", "NSStoreModelVersionChecksumKey"):
                before.pop(key); after.pop(key, None)
            assert typed(after) == typed(before), (typed(before), typed(after))
            """, [source.path, output.path])
        #expect(compared.status == 0, "\(compared.stderr)")
    }

    @Test func unknownHashesLeaveTheHashesOut() throws {
        let existing = try PropertyListSerialization.data(
            fromPropertyList: ["NSStoreType": "SQLite", "NSStoreModelVersionHashes": ["Post": Data(count: 32)]],
            format: .binary, options: 0)
        let rewritten = try CoreDataMigrationProgram.rewrittenMetadataPlist(
            existing, with: .init(versionIdentifiers: ["2"], versionHashes: nil, versionHashesSource: nil))
        let decoded = try #require(
            try PropertyListSerialization.propertyList(from: rewritten, format: nil) as? [String: Any])
        #expect(decoded["NSStoreModelVersionHashes"] == nil)
        #expect(decoded["NSStoreModelVersionIdentifiers"] as? [String] == ["2"])
        #expect(decoded["NSStoreType"] as? String == "SQLite")
    }
}
