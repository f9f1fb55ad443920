import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// `backstage export` from fresh processes that never call setlocale, under different time zones.
@Suite struct ExportCommandTests {
    @Test(arguments: ["zip", "tar", "tar.gz", "tar.bz2", "tar.xz", "tar.zst", "7z"])
    func theSameDocumentsGiveTheSameBytesInEveryTimeZone(format: String) throws {
        let scratch = try TemporaryDirectory()
        let fixture = try runProcess(backstageExecutable, ["fixture", scratch.path + "/c", "--layout", "v1", "--size", "150KB", "--state", "wal-pending"])
        #expect(fixture.status == 0)
        var archives: [Data] = []
        for zone in ["UTC", "Asia/Tokyo", "America/New_York"] {
            let output = scratch.path + "/\(zone.replacingOccurrences(of: "/", with: "_")).\(format)"
            let result = try runProcess(backstageExecutable, ["export", scratch.path + "/c", "--store", "Notes.sqlite", "-o", output, "--json"], environment: ["TZ": zone, "PATH": "/usr/bin:/bin"])
            #expect(result.status == 0, "\(result.stderr)")
            archives.append(try Data(contentsOf: URL(filePath: output)))
        }
        #expect(archives.dropFirst().allSatisfy { $0 == archives[0] })
        // Read back by bsdtar, an independent reader: the Unicode names are there, the store is not.
        let listing = try runProcess("/usr/bin/bsdtar", ["-tf", scratch.path + "/UTC.\(format)"])
        #expect(listing.stdout.contains("Photos/北京/天坛.jpg") && listing.stdout.contains("Reports/2026/Q1 résumé.csv"))
        #expect(!listing.stdout.contains("Notes.sqlite") && !listing.stdout.contains("_SUPPORT") && !listing.stdout.contains(".notes-settings"))
    }

    @Test func anUnknownFormatIsAUsageError() throws {
        let scratch = try TemporaryDirectory()
        #expect(try runProcess(backstageExecutable, ["export", scratch.path, "-o", scratch.path + "/out.rar"]).status == 2)
    }

    @Test func anExportImportedByAnotherProcessGivesBackEveryDocument() throws {
        let scratch = try TemporaryDirectory()
        #expect(try runProcess(backstageExecutable, ["fixture", scratch.path + "/c", "--layout", "v2", "--size", "150KB"]).status == 0)
        let archive = scratch.path + "/docs.tar.zst"
        #expect(try runProcess(backstageExecutable, ["export", scratch.path + "/c", "--store", "Notes.sqlite", "-o", archive, "--include-database"]).status == 0)

        try FileManager.default.createDirectory(atPath: scratch.path + "/d", withIntermediateDirectories: true)
        let result = try runProcess(backstageExecutable, ["import", archive, scratch.path + "/d", "--store", "Notes.sqlite", "--json"])

        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect((report?["skippedDatabases"] as? [String])?.count == 1)
        let source = snapshot(URL(filePath: scratch.path + "/c/Documents")).filter { !$0.key.hasPrefix(".") }
        #expect(!source.isEmpty && snapshot(URL(filePath: scratch.path + "/d/Documents")) == source)
        #expect(source.keys.contains("Photos/北京/天坛.jpg"))
    }

    @Test func anUnsafeArchiveExitsThreeNamingTheEntry() throws {
        let scratch = try TemporaryDirectory()
        let archive = scratch.path + "/evil.zip"
        let python = try runProcess("/usr/bin/python3", ["-c", """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w") as z:
                z.writestr("ok.txt", "fine"); z.writestr("../../escape.txt", "gotcha")
            """, archive])
        #expect(python.status == 0)

        try FileManager.default.createDirectory(atPath: scratch.path + "/c", withIntermediateDirectories: true)
        let result = try runProcess(backstageExecutable, ["import", archive, scratch.path + "/c", "--store", "Notes.sqlite"])

        #expect(result.status == 3)
        #expect(result.stderr == "error: \(archive): entry ../../escape.txt: its path climbs out of the folder with \"..\", refused\n")
        #expect(snapshot(URL(filePath: scratch.path + "/c/Documents")).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: scratch.url.deletingLastPathComponent().path + "/escape.txt"))
    }

    /// Memory must not grow with the number of entries either way.
    @Test func aLargeTreeIsExportedAndImportedInBoundedMemory() throws {
        let scratch = try TemporaryDirectory()
        let python = try runProcess("/usr/bin/python3", ["-c", """
            import os, sys
            root = sys.argv[1]
            for d in range(50):
                os.makedirs(f"{root}/Folder {d}", exist_ok=True)
                for n in range(100):
                    with open(f"{root}/Folder {d}/note {n}.txt", "wb") as f: f.write(os.urandom(2048))
            """, scratch.path + "/c/Documents"])
        #expect(python.status == 0)

        // Two compressing threads each, whatever the machine: zip's workers hold entries waiting for their turn.
        let export = try peakMemory(backstageExecutable, ["export", scratch.path + "/c", "--store", "Notes.sqlite", "-o", scratch.path + "/tree.tar.gz", "--threads", "2"])
        let zip = try peakMemory(backstageExecutable, ["export", scratch.path + "/c", "--store", "Notes.sqlite", "-o", scratch.path + "/tree.zip", "--threads", "2"])
        try FileManager.default.createDirectory(atPath: scratch.path + "/d", withIntermediateDirectories: true)
        let restore = try peakMemory(backstageExecutable, ["import", scratch.path + "/tree.tar.gz", scratch.path + "/d", "--store", "Notes.sqlite"])

        #expect(export.status == 0 && zip.status == 0 && restore.status == 0)
        #expect(export.peakBytes < 64 << 20 && zip.peakBytes < 64 << 20 && restore.peakBytes < 64 << 20,
                "export tar.gz \(export.peakBytes >> 20) MB, zip \(zip.peakBytes >> 20) MB, import \(restore.peakBytes >> 20) MB")
        let restored = snapshot(URL(filePath: scratch.path + "/d/Documents"))
        #expect(restored.count == 5_000 && restored == snapshot(URL(filePath: scratch.path + "/c/Documents")))
    }

    /// A 4 GiB + 1 MiB sparse file: past the 4 GiB limit of a plain zip, so only zip64 can hold it.
    /// Exported in a child whose peak memory is measured, then read back in full by Python's
    /// zipfile (which checks the CRC at the end of the entry).
    @Test func aFileOver4GiBIsExportedAsZip64InBoundedMemory() throws {
        let scratch = try TemporaryDirectory()
        let size: Int64 = (4 << 30) + (1 << 20)
        try FileManager.default.createDirectory(atPath: scratch.path + "/c/Documents", withIntermediateDirectories: true)
        let handle = try FileHandle(forWritingTo: { _ = FileManager.default.createFile(atPath: scratch.path + "/c/Documents/huge.bin", contents: nil); return URL(filePath: scratch.path + "/c/Documents/huge.bin") }())
        try handle.seek(toOffset: UInt64(size - 3))
        try handle.write(contentsOf: Data("END".utf8))
        try handle.close()

        let export = try peakMemory(backstageExecutable, ["export", scratch.path + "/c", "--store", "Notes.sqlite", "-o", scratch.path + "/huge.zip", "--level", "1"])
        #expect(export.status == 0)
        #expect(export.peakBytes < 64 << 20, "peak RSS \(export.peakBytes >> 20) MB while archiving 4 GiB")

        let check = try runProcess("/usr/bin/python3", ["-c", """
            import sys, zipfile
            z = zipfile.ZipFile(sys.argv[1]); info = z.getinfo("huge.bin"); f = z.open(info); n = 0; tail = b""
            while True:
                block = f.read(1 << 24)
                if not block: break
                n += len(block); tail = (tail + block)[-3:]
            print(info.file_size, n, tail.decode())
            """, scratch.path + "/huge.zip"])
        #expect(check.stdout == "\(size) \(size) END\n", "\(check.stderr)")
    }
}

/// Runs a command and returns its exit status and peak resident memory (`ru_maxrss` of the child).
func peakMemory(_ executable: String, _ arguments: [String]) throws -> (status: Int32, peakBytes: Int) {
    let result = try runProcess("/usr/bin/python3", ["-c", """
        import os, sys
        devnull = os.open(os.devnull, os.O_WRONLY)
        # posix_spawn: a fork of this interpreter would count in the child's peak RSS.
        pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
        _, status, usage = os.wait4(pid, 0)
        print(os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024)
        """, executable] + arguments)
    let fields = result.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    guard fields.count == 2 else { throw Failure("peakMemory: \(result.stderr)") }
    return (Int32(fields[0]), fields[1])
}
