import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct CatalogAddVersion: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-version",
        abstract: "Add the version a plan reaches from the catalog's newest one.",
        discussion: """
            The plan is run for real on a small generated container of the newest version; every store it \
            leaves is captured as the new version's, and the plan is copied into the catalog and fingerprinted: \
            once a newer version follows, it has shipped and `catalog check` fails if it changes.

            --expect LOCATION=FILE gives the store (or .sql script) a fresh install of the new version creates \
            at LOCATION: the store the plan leaves there must have the same schema (tables and columns with \
            type, NOT NULL, default, primary key, collation and a generated column's expression; AUTOINCREMENT; \
            CHECK constraints, a column's equal to the same one on the table; indexes; foreign keys; triggers; \
            views; virtual tables). Its schema is kept in the catalog, and `catalog check` and `simulate` compare \
            with it too.

            When the plan names a store or table that is not there, has an error `catalog lint` finds, fails \
            on the generated container (a migration naming a missing table, say), leaves a table unaccounted for, or leaves a schema that \
            differs from a fresh install, nothing is written and each problem is printed (exit 1). A name \
            that is not a version name (letters, digits, '.', '-', '_', '+') is a usage error (exit 2); a \
            catalog, plan or --expect file that cannot be read, or a version name the catalog already has \
            without --replace, is exit 3.

            Example:
              backstage catalog add-version Cookbook v2 --plan v1-to-v2.json --expect applicationSupport/Cookbook.sqlite=fresh-v2.sqlite
            """
    )

    @Argument(help: "The catalog folder.", completion: .directory)
    var directory: String

    @Argument(help: "The new version's name.")
    var name: String

    @Option(help: "The plan that reaches it from the newest version.", completion: .file(extensions: ["json"]))
    var plan: String

    @Option(
        help:
            "The store the new version's app writes to (default: the one that received the previous app's main table).")
    var writable: ContainerLocation?

    @Option(help: "What changed in this version, for people.")
    var summary: String?

    @Option(
        help: ArgumentHelp(
            "The store (or .sql script) a fresh install of this version creates at LOCATION (repeatable).",
            valueName: "location=file"))
    var expect: [String] = []

    @Flag(help: "Replace the newest version of this name, which has not shipped yet (no version follows it).")
    var replace = false

    func parsedExpectations() throws -> [ContainerLocation: URL] {
        var result: [ContainerLocation: URL] = [:]
        for item in expect {
            guard let equals = item.firstIndex(of: "="), let location = ContainerLocation(String(item[..<equals])),
                item.index(after: equals) < item.endIndex
            else {
                throw ValidationError(
                    "--expect \(item): write LOCATION=FILE, such as applicationSupport/Cookbook.sqlite=fresh.sqlite.")
            }
            guard result[location] == nil else { throw ValidationError("--expect names \(location) twice.") }
            result[location] =
                URL(
                    filePath: String(item[item.index(after: equals)...]),
                    relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
                ).standardizedFileURL
        }
        return result
    }

    func validate() throws {
        if let reason = CatalogVersion.problem(withName: name) {
            throw ValidationError("The version name \(name) \(reason).")
        }
        _ = try parsedExpectations()
    }

    func run() async throws {
        var catalog = try CatalogFolder(at: URL(filePath: directory))
        let outcome = try CatalogBuilder.addVersion(
            name, plan: URL(filePath: plan), summary: summary, writable: writable, expect: try parsedExpectations(),
            replace: replace, to: &catalog, executable: Executable.url)
        guard outcome.problems.isEmpty else {
            for problem in outcome.problems { Output.out(problem.description) }
            throw ExitCode(ExitStatus.checkFailed)
        }
        Output.out(try CatalogShow.render(catalog))
    }
}
