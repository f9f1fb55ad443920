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
        #expect(plans.count == 1)
        try Data(try #require(plans.first).utf8).write(to: scratch.url.appending(path: "v1-to-v2.json"))
        let commands = try Self.blocks("sh").flatMap { $0.split(separator: "\n").map(String.init) }.filter { $0.hasPrefix("backstage ") }
        #expect(commands.count == 6, "capture, add-version, check, fixture, simulate, bench")
        var outputs: [String] = []
        for command in commands {
            let arguments = command.split(separator: " ").dropFirst().map(String.init)
            let result = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            outputs.append(result.stdout)
        }
        #expect(outputs[0].contains("documents/Cookbook.sqlite (written by the app): 5 tables, 1 indexes, 1 triggers, 1 views, 1 virtual tables"))
        #expect(outputs[2].contains("2 version(s), no problem found"))
        #expect(FileManager.default.fileExists(atPath: scratch.url.appending(path: "cookbook-v1/Documents/Cookbook.sqlite-wal").path))
        #expect(outputs[4].contains("12 runs, 12 passed, 0 failed"), "\(outputs[4])")
        #expect(outputs[5].contains("projected at 1 GB") && outputs[5].contains("v1-to-v2 #2: migrate"), "\(outputs[5])")
    }
}
