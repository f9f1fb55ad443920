import ArgumentParser
import Backstage
import Foundation

struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the internal files a user can see in Documents.",
        discussion: """
            Reads Documents without opening any store: databases (by their SQLite header, whatever \
            their name), -wal/-shm/-journal sidecars, orphan sidecars (by their headers), Core Data \
            .Name_SUPPORT folders and Backstage temporaries. A file is internal only on such evidence: \
            a user's Cargo.lock or empty notes.db is a document. Exits 1 when it finds any.

            Example:
              backstage audit ~/Containers/MyApp --json
            """
    )

    @OptionGroup var options: ContainerOptions

    @Flag(help: "Print one JSON object: {\"findings\":[{\"path\",\"kind\",\"visible\",\"bytes\"}]}.")
    var json = false

    func run() async throws {
        let container = try options.resolve()
        let report = try Auditor(container: container).audit()
        if json {
            try Output.json(report)
        } else {
            Output.out(Self.render(report, documents: container.documents))
        }
        if !report.isClean { throw ExitCode(ExitStatus.checkFailed) }
    }

    static func render(_ report: AuditReport, documents: URL) -> String {
        guard !report.isClean else { return "Documents is clean: no internal file in \(documents.path)" }
        let width = max(report.findings.map(\.path.count).max() ?? 0, 4)
        var lines = ["\(report.findings.count) internal file\(report.findings.count == 1 ? "" : "s") in \(documents.path):"]
        for finding in report.findings {
            let path = finding.path.padding(toLength: width, withPad: " ", startingAt: 0)
            let kind = finding.kind.rawValue.padding(toLength: 19, withPad: " ", startingAt: 0)
            lines.append("  \(path)  \(kind) \(finding.visible ? "visible" : "hidden ")  \(formatBytes(finding.bytes))")
        }
        lines.append("Run `backstage relocate` on the container to move them out of Documents.")
        return lines.joined(separator: "\n")
    }
}
