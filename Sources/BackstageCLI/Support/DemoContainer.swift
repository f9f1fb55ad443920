import Backstage
import Foundation

/// Builds the demo's version-1 container: user documents, a Core Data support folder, and a
/// store written by a real child process that is killed before it checkpoints.
enum DemoContainer {
    static func build(_ container: AppContainer, store: StoreFileSet, rows: Int, walRows: Int) throws {
        let fm = FileManager.default
        for root in [container.documents, container.applicationSupport, container.caches, container.temporary] {
            try fm.createDirectory(at: root, withIntermediateDirectories: true)
        }
        let documents: [(String, Data)] = [
            ("Trips/Lisbon.md", Data("# Lisbon\n\nPastéis de nata at 9.\n".utf8)),
            ("Trips/Café menu – été.txt", Data("Café crème 2,50 €\n".utf8)),
            ("Reports/2026/Q1 résumé.csv", Data("month,notes\njan,12\nfeb,9\nmar,14\n".utf8)),
            ("Photos/北京.jpg", Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })),
        ]
        for (path, data) in documents {
            let url = container.documents.appending(path: path)
            try fm.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
        try fm.createDirectory(at: container.documents.appending(path: "Empty Folder"), withIntermediateDirectories: true)
        let external = store.supportFolder.appending(path: "_EXTERNAL_DATA")
        try fm.createDirectory(at: external, withIntermediateDirectories: true)
        for n in 1...3 {
            try Data(repeating: UInt8(n), count: 64 << 10).write(to: external.appending(path: "B4C1D3A2-0000-4000-8000-00000000000\(n)"))
        }

        // The writer is this very executable, run as a child and killed by SIGKILL.
        let child = Process()
        child.executableURL = URL(filePath: "/proc/self/exe")
        child.arguments = ["demo-writer", store.main.path, "--rows", String(rows), "--wal-rows", String(walRows)]
        try child.run()
        child.waitUntilExit()
        guard child.terminationReason == .uncaughtSignal, child.terminationStatus == SIGKILL else {
            throw CLIError(description: "the demo writer for \(store.main.path) ended with status \(child.terminationStatus) instead of being killed")
        }
    }
}
