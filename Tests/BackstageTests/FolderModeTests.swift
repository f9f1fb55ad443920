import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A folder made to receive a store, a support folder or a quarantined file is no wider than the
/// folder it came from: owner-only stays owner-only.
@Suite struct FolderModeTests {
    func mode(_ url: URL) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
    }

    @Test(arguments: [RelocationStrategy.rename, .copy])
    func anOwnerOnlyStoresNewFolderIsOwnerOnly(strategy: RelocationStrategy) async throws {
        let app = try TestContainer(declaring: ["Private/Notes.sqlite"])
        let folder = app.documents.appending(path: "Private")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try PythonSQLite.writeThenKill(folder.appending(path: "Notes.sqlite"), committed: 5, walOnly: 3)
        try app.writeDocument("Private/.Notes_SUPPORT/_EXTERNAL_DATA/blob", Data(repeating: 3, count: 100))
        try shell("chmod 700 '\(folder.path)' '\(folder.path)/.Notes_SUPPORT'")

        let report = try await Relocator(container: app.container).relocate(RelocationOptions(strategy: strategy))

        #expect(report.moved.map(\.store) == ["Private/Notes.sqlite"])
        let moved = app.applicationSupport.appending(path: "Private")
        let folderMode = try mode(moved)
        #expect(folderMode == 0o700, "Application Support/Private: \(String(folderMode, radix: 8))")
        #expect(try mode(moved.appending(path: ".Notes_SUPPORT")) == 0o700)
        #expect(try PythonSQLite.inspect(StoreFileSet(main: moved.appending(path: "Notes.sqlite"))).rows == 8)
    }

    @Test func aQuarantinedOrphanFromAnOwnerOnlyFolderStaysOwnerOnly() async throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 2, walOnly: 2)
        let folder = app.documents.appending(path: "Private")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: app.documentsStore().sidecar(.wal), to: folder.appending(path: "Gone.sqlite-wal"))
        try shell("chmod 700 '\(folder.path)'")

        let report = try await Relocator(container: app.container).relocate()

        let quarantined = try #require(report.quarantined.first { $0.from.hasSuffix("Private/Gone.sqlite-wal") })
        let parent = URL(filePath: quarantined.to).deletingLastPathComponent()
        #expect(parent.lastPathComponent == "Private")
        let parentMode = try mode(parent)
        #expect(parentMode == 0o700, "\(parent.path): \(String(parentMode, radix: 8))")
    }
}
