// The libraries an app ships (`Backstage`, `BackstageExport`) and nothing else, in a process of
// their own: a relocation that copies across file systems and verifies the copy, then what the
// process's state says. Run by LibraryProcessStateTests (debug) and scripts/check-release-products
// (release), with BACKSTAGE_DISK_LOG set: a library must read no environment to register anything.
//
// Prints `default-vfs NAME`, `sigbus-before N`, `sigbus-after N` (the SIGBUS action's handler as a
// number, 0 for the default) and `rows N` (read back from the moved store); exits 0 when the
// default VFS is SQLite's own (`unix`), SIGBUS's action is the one the process started with, and
// every row moved; 1 otherwise, 2 when it could not run.
import Backstage
import BackstageExport
import Foundation
import GRDB
import GRDBSQLite

#if canImport(Glibc)
    import Glibc
#endif

func busAction() -> UInt {
    var current = sigaction()
    sigaction(SIGBUS, nil, &current)
    return unsafeBitCast(current.__sigaction_handler, to: UInt.self)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: BackstageLibraryProbe DOCUMENTS_FOLDER OTHER_FS_FOLDER\n".utf8))
    exit(2)
}
let before = busAction()
let documents = URL(filePath: arguments[1], directoryHint: .isDirectory)
let other = URL(filePath: arguments[2], directoryHint: .isDirectory)
let rows = 4000
do {
    for folder in [documents, other.appending(path: "Support"), other.appending(path: "Caches"), other.appending(path: "tmp")] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }
    // A store of several MiB: the copy's verification compares whole 8 MiB windows and a partial one.
    let queue = try DatabaseQueue(path: documents.appending(path: "Probe.sqlite").path)
    try queue.write { db in
        try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, body BLOB)")
        for id in 0..<rows {
            try db.execute(sql: "INSERT INTO item(id, body) VALUES (?, randomblob(3000))", arguments: [id])
        }
    }
    try queue.close()
    let container = AppContainer(
        documents: documents, applicationSupport: other.appending(path: "Support"),
        caches: other.appending(path: "Caches"), temporary: other.appending(path: "tmp")
    ).declaringStores(StoreDeclarations(["Probe.sqlite"]))
    _ = try await Relocator(container: container).relocate(RelocationOptions(strategy: .copy))
    let moved = try DatabaseQueue(path: other.appending(path: "Support/Probe.sqlite").path)
    let count = try moved.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item") ?? 0 }
    try moved.close()
    let vfs = sqlite3_vfs_find(nil).map { String(cString: $0.pointee.zName) } ?? "none"
    let after = busAction()
    print("default-vfs \(vfs)")
    print("sigbus-before \(before)")
    print("sigbus-after \(after)")
    print("rows \(count)")
    exit(vfs == "unix" && after == before && count == rows ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("BackstageLibraryProbe: \(error)\n".utf8))
    exit(2)
}
