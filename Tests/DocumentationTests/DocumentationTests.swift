import BackstageTestSupport
import Foundation
import Testing

/// Every Swift block of the README and of the DocC articles compiles: each is in a `// doc:`
/// region of the tests (Snippets.swift, or a test that runs it) character for character, or is a package manifest that
/// `swift package dump-package` accepts and whose products Backstage has, or is the example test
/// of "Testing upgrades in Swift" (compiled and run as CookbookUpgradeTests).
@Suite struct DocumentationTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Block: CustomStringConvertible {
        var file: String
        var index: Int
        var text: String
        var description: String { "\(file)#\(index)" }
        var isManifest: Bool { text.contains(".product(name:") }
        var isExampleTest: Bool { text.contains("@Suite struct CookbookUpgradeTests") }
    }

    static func documents() throws -> [String] {
        var files = ["README.md"]
        for folder in try FileManager.default.contentsOfDirectory(atPath: root.appending(path: "Sources").path).sorted() {
            let sources = "Sources/\(folder)"
            for docc in (try? FileManager.default.contentsOfDirectory(atPath: root.appending(path: sources).path))?.sorted() ?? [] where docc.hasSuffix(".docc") {
                for article in try FileManager.default.contentsOfDirectory(atPath: root.appending(path: "\(sources)/\(docc)").path).sorted() where article.hasSuffix(".md") {
                    files.append("\(sources)/\(docc)/\(article)")
                }
            }
        }
        return files
    }

    static func swiftBlocks() throws -> [Block] {
        var blocks: [Block] = []
        for file in try documents() {
            var current: [String]?
            var index = 0
            for line in try String(contentsOf: root.appending(path: file), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
                if current == nil, line == "```swift" {
                    current = []
                } else if current != nil, line == "```" {
                    blocks.append(Block(file: file, index: index, text: current!.joined(separator: "\n")))
                    index += 1
                    current = nil
                } else if current != nil {
                    current!.append(String(line))
                }
            }
        }
        return blocks
    }

    /// The `// doc: file#index` … `// end doc` regions of the test sources, dedented to their
    /// marker's indentation, and the text of the files that hold them.
    static func snippets() throws -> (regions: [String: String], source: String) {
        var regions: [String: String] = [:]
        var sources = ""
        let tests = root.appending(path: "Tests")
        for path in FileManager.default.subpaths(atPath: tests.path) ?? [] where path.hasSuffix(".swift") && path != "DocumentationTests/DocumentationTests.swift" {
            let text = try String(contentsOf: tests.appending(path: path), encoding: .utf8)
            guard text.contains("// doc: ") else { continue }
            sources += text
            var key: String?
            var indent = 0
            var lines: [String] = []
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                let trimmed = line.drop { $0 == " " }
                if trimmed.hasPrefix("// doc: ") {
                    key = String(trimmed.dropFirst("// doc: ".count))
                    indent = line.count - trimmed.count
                    lines = []
                } else if trimmed == "// end doc", let current = key {
                    #expect(regions[current] == nil, "\(current) is in the tests twice")
                    regions[current] = lines.joined(separator: "\n")
                    key = nil
                } else if key != nil {
                    lines.append(line.prefix(indent).allSatisfy { $0 == " " } ? String(line.dropFirst(indent)) : String(line))
                }
            }
        }
        return (regions, sources)
    }

    @Test func thereAreBlocksToCheck() throws {
        let blocks = try Self.swiftBlocks()
        #expect(blocks.count >= 20)
        #expect(blocks.filter(\.isManifest).count == 2)
        #expect(blocks.filter(\.isExampleTest).count == 1)
    }

    @Test func everySwiftBlockIsCompiledHere() throws {
        let (regions, source) = try Self.snippets()
        var seen: Set<String> = []
        for block in try Self.swiftBlocks() where !block.isManifest && !block.isExampleTest {
            let lines = block.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for line in lines where line.hasPrefix("import ") {
                #expect(source.contains("\n\(line)\n"), "\(block): no test source with its copy does \(line)")
            }
            let body = lines.filter { !$0.hasPrefix("import ") }.drop { $0.isEmpty }.joined(separator: "\n")
            let key = block.description
            seen.insert(key)
            guard let region = regions[key] else {
                Issue.record("\(block) is compiled nowhere: add it to Tests/DocumentationTests/Snippets.swift as the body of a function, between `// doc: \(key)` and `// end doc`")
                continue
            }
            #expect(region == body, "\(block) differs from its compiled copy in the tests")
        }
        #expect(Set(regions.keys).subtracting(seen).isEmpty, "the tests hold blocks the documentation no longer has: \(Set(regions.keys).subtracting(seen))")
    }

    @Test func everyManifestBlockIsAValidManifestNamingBackstagesProducts() throws {
        // Its own scratch path: `swift test` holds the lock of the package's .build.
        let scratchPath = try TemporaryDirectory()
        let ours = try runProcess("/usr/bin/env", ["swift", "package", "--scratch-path", scratchPath.path, "dump-package"], currentDirectory: Self.root)
        #expect(ours.status == 0, "\(ours.stderr)")
        let products = try #require(try JSONSerialization.jsonObject(with: Data(ours.stdout.utf8)) as? [String: Any])["products"] as? [[String: Any]]
        let names = Set((products ?? []).compactMap { $0["name"] as? String })
        #expect(names.contains("BackstageHarness"))
        for block in try Self.swiftBlocks() where block.isManifest {
            let scratch = try TemporaryDirectory()
            // A fragment is the arguments of Package(...); a lone target is one of its targets.
            let arguments = block.text.hasPrefix(".") ? "dependencies: [.package(path: \"../backstage\")], targets: [.target(name: \"App\"), \(block.text)]" : block.text
            let manifest = "// swift-tools-version: 6.1\nimport PackageDescription\nlet package = Package(name: \"MyApp\",\n\(arguments)\n)\n"
            try Data(manifest.utf8).write(to: scratch.url.appending(path: "Package.swift"))
            let dumped = try runProcess("/usr/bin/env", ["swift", "package", "dump-package"], currentDirectory: scratch.url)
            #expect(dumped.status == 0, "\(block): \(dumped.stderr)")
            for match in block.text.matches(of: /\.product\(name: "([A-Za-z]+)", package: "backstage"\)/) {
                #expect(names.contains(String(match.1)), "\(block) names a product Backstage does not have: \(match.1)")
            }
        }
    }
}
