import BackstageTestSupport
import Foundation
import Testing

/// backstage(1) as `make man` writes it (scripts/manual, from the built `backstage`) and `man` shows it.
@Suite struct ManualTests {
    static let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "scripts/manual")

    /// The page's mdoc source, what `man --warnings` printed on a 200-column UTF-8 terminal, and its warnings.
    struct Page {
        var source: String
        var text: String
        var warnings: String

        /// The rendered lines from `heading` to the next heading of the same level (sections start in
        /// column 0, a command's subsection with three spaces and `backstage`).
        func section(_ heading: String) -> String {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let isSubsection = heading.hasPrefix("   ")
            guard let start = lines.firstIndex(of: heading) else { return "" }
            let end = lines[(start + 1)...].firstIndex { line in
                let isSection = !line.isEmpty && !line.hasPrefix(" ")
                return isSection || (isSubsection && line.hasPrefix("   backstage"))
            } ?? lines.endIndex
            return lines[start..<end].joined(separator: "\n")
        }

        /// Text with every run of white space (line breaks and filling included) as one space.
        static func words(_ text: String) -> String {
            text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
    }

    static func page() throws -> Page {
        let folder = try TemporaryDirectory()
        let file = folder.url.appending(path: "backstage.1")
        let written = try runProcess("/usr/bin/python3", [script.path, backstageExecutable, file.path])
        #expect(written.status == 0, "scripts/manual failed: \(written.stderr)")
        let source = try String(contentsOf: file, encoding: .utf8)
        let shown = try runProcess("/usr/bin/man", ["--warnings", "-l", file.path],
                                   environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "MANWIDTH": "200"])
        #expect(shown.status == 0, "man -l failed: \(shown.stderr)")
        return Page(source: source, text: shown.stdout, warnings: shown.stderr)
    }

    @Test func manShowsThePageWithoutAWarning() throws {
        let page = try Self.page()
        #expect(page.warnings.isEmpty)
        #expect(page.text.contains("NAME"))
        #expect(page.section("COMMANDS").contains("   backstage catalog init"))
    }

    @Test func exitStatusListsTheFourStatusesOfTheContract() throws {
        let section = Page.words(try Self.page().section("EXIT STATUS"))
        #expect(section.contains("0 Success"))
        #expect(section.contains("1 A check found a problem"))
        #expect(section.contains("2 Usage error"))
        #expect(section.contains("3 Operational failure"))
        #expect(!section.contains(">0"))
    }

    @Test func environmentNamesEveryVariableAUserSets() throws {
        let section = try Self.page().section("ENVIRONMENT")
        for variable in ["BACKSTAGE_EXECUTABLE", "SOURCE_DATE_EPOCH", "XDG_DOCUMENTS_DIR", "XDG_DATA_HOME",
                         "XDG_CACHE_HOME", "HOME", "TMPDIR"] {
            #expect(section.contains("\n     \(variable)"), "\(variable) has no entry")
        }
    }

    @Test func arrowsAndDashesOfTheHelpTextSurvive() throws {
        let page = try Self.page()
        let nonASCII = page.source.unicodeScalars.filter { !$0.isASCII }
        #expect(nonASCII.isEmpty)
        #expect(page.source.contains(#"v1\~\(->\~v4"#))
        #expect(Page.words(page.text).contains("plans v1 → v4"))
        #expect(Page.words(page.text).contains("versions v1–v4"))
    }

    @Test func catalogInitShowsItsOwnVersionOptionAndNotTheGeneratedOne() throws {
        let page = try Self.page()
        let section = page.section("   backstage catalog init")
        let items = section.split(separator: "\n").filter { $0.hasPrefix("     --version") }
        #expect(items == ["     --version version"])
        #expect(!section.contains("Show the version."))
        #expect(page.text.components(separatedBy: "Show the version.").count == 2)
        #expect(page.text.components(separatedBy: "Show help information.").count == 2)
    }

    @Test func optionsShowTheirDefaultsAndExamplesKeepTheirLines() throws {
        let section = try Self.page().section("   backstage relocate")
        #expect(Page.words(section).contains("--strategy strategy auto (rename on one file system, copy across), "
            + "rename, or copy. Default: auto."))
        let lines = section.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains("backstage relocate ~/Containers/MyApp --store Notes.sqlite --strategy copy"))
        #expect(lines.contains { $0.hasPrefix("backstage relocate ~/Containers/MyApp --from applicationSupport") })
    }
}
