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
            let result = try runProcess(backstageExecutable, ["export", scratch.path + "/c", "-o", output, "--json"], environment: ["TZ": zone, "PATH": "/usr/bin:/bin"])
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
}
