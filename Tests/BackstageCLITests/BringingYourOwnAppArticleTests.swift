import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The DocC article "Bringing your own app", run as written: its plan and every `backstage`
/// command of its shell blocks, in order, on a Cookbook store made here the way the app makes it.
@Suite struct BringingYourOwnAppArticleTests {
    static let article = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Sources/BackstageHarness/BackstageHarness.docc/BringingYourOwnApp.md")

    /// The contents of the article's fenced blocks of `language`, in order.
    static func blocks(_ language: String) throws -> [String] {
        let text = try String(contentsOf: article, encoding: .utf8)
        var result: [String] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```\(language)" { current = [] } else if current != nil, line == "```" {
                result.append(current!.joined(separator: "\n"))
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        return result
    }

    @Test func theArticlesCommandsWorkAsWritten() throws {
        let scratch = try TemporaryDirectory()
        try CookbookStore.make(at: scratch.url.appending(path: "Pulled/Cookbook.sqlite"))
        let plans = try Self.blocks("json")
        #expect(plans.count == 2)
        for (name, plan) in zip(["v1-to-v2.json", "v2-to-v3.json"], plans) { try Data(plan.utf8).write(to: scratch.url.appending(path: name)) }
        let freshInstalls = try Self.blocks("sql")
        #expect(freshInstalls.count == 2)
        for (name, sql) in zip(["cookbook-v2.sql", "cookbook-v3.sql"], freshInstalls) { try Data(sql.utf8).write(to: scratch.url.appending(path: name)) }
        let commands = try Self.blocks("sh").flatMap { $0.split(separator: "\n").map(String.init) }.filter { $0.hasPrefix("backstage ") }
        #expect(commands.count == 9, "capture, add-version ×2, add-check ×2, check, fixture, simulate, bench")
        // As a user's shell runs them: quoted arguments, `backstage` on PATH.
        let path = URL(filePath: backstageExecutable).deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        var outputs: [String] = []
        for command in commands {
            let result = try runProcess("/bin/sh", ["-c", "PATH='\(path)' \(command)"], currentDirectory: scratch.url)
            #expect(result.status == 0, "\(command): \(result.stdout) \(result.stderr)")
            outputs.append(result.stdout)
        }
        #expect(outputs[0].contains("documents/Cookbook.sqlite (written by the app): 5 tables, 1 indexes, 1 triggers, 1 views, 1 virtual tables"))
        #expect(outputs[1].contains("fresh install: stores/v2/applicationSupport-Cookbook.sqlite.fresh-install.sql"))
        #expect(outputs[4].contains("check \"recipes kept\" added"))
        #expect(outputs[5].contains("3 version(s), no problem found"))
        #expect(FileManager.default.fileExists(atPath: scratch.url.appending(path: "cookbook-v1/Documents/Cookbook.sqlite-wal").path))
        #expect(outputs[7].contains("12 runs, 12 passed, 0 failed"), "\(outputs[7])")
        let junit = try String(contentsOf: scratch.url.appending(path: "simulate.xml"), encoding: .utf8)
        #expect(junit.contains(#"tests="12" failures="0""#))
        #expect(outputs[8].contains("projected at 1 GB") && outputs[8].contains("v2-to-v3 #1: migrate"), "\(outputs[8])")

        // The mistake the article shows: a fresh install declaring the column NOT NULL DEFAULT 0.
        let wrong = freshInstalls[0].replacingOccurrences(of: "photo BLOB, rating INTEGER)", with: "photo BLOB, rating INTEGER NOT NULL DEFAULT 0)")
        #expect(wrong != freshInstalls[0])
        try Data(wrong.utf8).write(to: scratch.url.appending(path: "wrong-v2.sql"))
        _ = try runProcess(backstageExecutable, ["catalog", "init", "Again", "--from", "Pulled/Cookbook.sqlite", "--at", "documents/Cookbook.sqlite"], currentDirectory: scratch.url)
        let refused = try runProcess(backstageExecutable, ["catalog", "add-version", "Again", "v2", "--plan", "v1-to-v2.json", "--expect", "applicationSupport/Cookbook.sqlite=wrong-v2.sql"], currentDirectory: scratch.url)
        #expect(refused.status == 1)
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        for line in refused.stdout.split(separator: "\n") {
            #expect(text.contains(line.replacingOccurrences(of: scratch.url.appending(path: "wrong-v2.sql").path, with: "cookbook-v2.sql")), "the article shows \(line)")
        }
        #expect(refused.stdout.split(separator: "\n").count == 2)
    }
}
