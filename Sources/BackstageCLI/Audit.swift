import ArgumentParser
import Backstage
import Foundation

struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "List the internal files a user can see in Documents.",
        discussion: """
            Reads Documents without opening any store: the app's stores (those its --plan, --catalog \
            or --store declare, whatever their header), -wal/-shm/-journal sidecars, orphan sidecars (by \
            their headers), Core Data .Name_SUPPORT folders and Backstage temporaries. A file is internal \
            only on such evidence: a user's Cargo.lock or empty notes.db is a document. A database the \
            app did not declare is the user's: listed apart, never a finding (with nothing declared, \
            every database is). Exits 1 when it finds an internal file.

            Example:
              backstage audit ~/Containers/MyApp --plan plans/v1-to-v2.json --json
            """
    )

    @OptionGroup var options: ContainerOptions
    @OptionGroup var declared: DeclarationOptions

    @Flag(
        help:
            "Print one JSON object: {\"findings\":[{\"path\",\"kind\",\"visible\",\"bytes\"}]}, the user's databases in \"userDatabases\"."
    )
    var json = false

    func run() async throws {
        let container = try declared.declaring(in: try options.resolve())
        let report = try Auditor(container: container).audit()
        if json {
            try Output.json(report)
        } else {
            Output.out(Self.render(report, documents: container.documents, declared: declared.arguments))
        }
        // A declaration that matches nothing is said, with the database it may have meant: a typo
        // would otherwise leave the real store the user's. A typo warns on stderr (so --json stays one
        // object); a name with nothing close is a fresh install's, said in the text only.
        // A store a plan or catalog declares is absent once a later version moved it: only a likely
        // typo of one is said.
        let databases = (report.findings.filter { $0.kind == .database } + report.userDatabases).map(\.path)
        let named = Set(try declared.storePaths(in: container.documents))
        for store in container.declaredStores.patterns
        where !store.contains(where: { "*?[".contains($0) })
            && !FileManager.default.fileExists(atPath: container.documents.appending(path: store).path)
        {
            let option = named.contains(store) ? "--store \(store)" : "the store \(store) the app declares"
            if let closest = NearestName.suggestion(for: store, among: databases) {
                Output.err(
                    "warning: \(option) matches no file in \(container.documents.path) (did you mean \(closest)?)")
            } else if !json && named.contains(store) {
                Output.out("No file matches --store \(store) in Documents (a fresh install has none yet).")
            }
        }
        if !report.isClean { throw ExitCode(ExitStatus.checkFailed) }
    }

    /// The report for a terminal; `declared` is the declaration to repeat in the `relocate` it suggests
    /// (a bare `relocate` moves no store), `next` what to say instead of suggesting one.
    static func render(_ report: AuditReport, documents: URL, declared: [String] = [], next: String? = nil) -> String {
        var lines: [String] = []
        let width = max(
            (report.findings + report.userDatabases + report.userDatabaseSupport).map(\.path.count).max() ?? 0, 4)
        func row(_ finding: AuditFinding, _ kind: String) -> String {
            let path = finding.path.padding(toLength: width, withPad: " ", startingAt: 0)
            let kind = kind.padding(toLength: 19, withPad: " ", startingAt: 0)
            return "  \(path)  \(kind) \(finding.visible ? "visible" : "hidden ")  \(formatBytes(finding.bytes))"
        }
        if report.isClean {
            lines.append("Documents is clean: no internal file in \(documents.path)")
        } else {
            lines.append(
                "\(report.findings.count) internal file\(report.findings.count == 1 ? "" : "s") in \(documents.path):")
            lines += report.findings.map { row($0, $0.kind.rawValue) }
            let options = declared.map { $0.contains(" ") || $0.contains("*") ? "'\($0)'" : $0 }
            lines.append(
                next
                    ?? "Run `backstage relocate \((["CONTAINER"] + options).joined(separator: " "))` to move them out of Documents."
            )
        }
        if !report.userDatabases.isEmpty {
            let count = report.userDatabases.count
            lines.append(
                "\(count) database\(count == 1 ? "" : "s") not declared by the app, kept as the user's document\(count == 1 ? "" : "s"):"
            )
            lines += report.userDatabases.map { row($0, "user database") }
        }
        // A user's database's Core Data support folder is part of that document, listed with it.
        lines += report.userDatabaseSupport.map { row($0, "user db support") }
        if report.noStoreDeclared {
            lines.append(
                "No store declared (--plan, --catalog or --store): every database in Documents is taken for the user's."
            )
        }
        return lines.joined(separator: "\n")
    }
}
