import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The recovery of an interrupted split vouches only for what is there: the external data files
/// its rows reference.
@Suite struct SplitRecoveryTests {
    static let plans = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Fixtures/Notes/plans")

    @Test func aSplitWhoseAttachmentsVanishedIsNotReportedCompleted() throws {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "c")
        #expect(try runProcess(backstageExecutable, ["fixture", root.path, "--layout", "v2", "--size", "200KB", "--state", "clean"]).status == 0)
        let plan = ["--plan", Self.plans.appending(path: "v2-to-v3.json").path]
        let killed = try runSimulateChild(.upgrade(arguments: [root.path] + plan, crashAt: CrashPoint(.split, .committed)))
        #expect(killed.killedBySignal == SIGKILL)

        // What a power cut leaves when the moved folder's entries never reached the disk.
        let external = root.appending(path: "Library/Application Support/.UserData_SUPPORT/_EXTERNAL_DATA")
        let files = try FileManager.default.contentsOfDirectory(atPath: external.path).sorted()
        #expect(!files.isEmpty, "the fixture has attachments")
        try FileManager.default.removeItem(at: external.appending(path: files[0]))

        let rerun = try runProcess(backstageExecutable, ["upgrade", root.path] + plan)
        #expect(rerun.status == 3, "\(rerun.stdout)")
        #expect(rerun.stderr.contains("1 of the \(files.count) external data files the rows of applicationSupport/UserData.sqlite reference are missing"), "\(rerun.stderr)")
        #expect(!rerun.stdout.contains("completed"))
        #expect(FileManager.default.fileExists(atPath: root.appending(path: "Library/Application Support/.backstage/journal.json").path),
                "the journal keeps the step")
    }
}
