import ArgumentParser
import BackstageHarness
import Foundation

struct CatalogLintCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Report what each plan's migrations would fail at or lose on real installs.",
        discussion: """
            Each migration of each plan is read against the statistics the catalog captured for the version \
            before it (counts and shares, never row content): a CREATE UNIQUE INDEX on a column whose values \
            repeat, ADD COLUMN ... NOT NULL without a DEFAULT, a rebuilt table declaring NOT NULL (or CHECK \
            (... IS NOT NULL), CHECK (typeof(c) = 'kind')) on a column holding other values, or a foreign key \
            into a table that is empty while the column holds values, a DROP TABLE or DROP COLUMN of data (an error unless \
            the migration says "destructive": true) are errors; a table rebuilt row by row that would take over \
            a second at the catalog's sizes is a warning, with its estimated time. A split that would separate \
            tables the schema ties together (a foreign key, a trigger, a view reading both, a full-text table's \
            content=), putting them in two stores or discarding the one the other needs, is an error. Each \
            finding names the version, the store, the migration (or the split) and the table.

            A catalog made from a Core Data model (catalog init --model) is also read pair by pair of model \
            versions: a change Core Data's lightweight migration cannot infer (a type change other than a \
            widening, an attribute made or added mandatory without a default, a new mandatory relationship, \
            two entity hierarchies merged...) is an error naming the model version, entity and attribute or \
            relationship, unless a mapping model given with --mapping maps the pair; its custom migration \
            policies are warnings (they need the developer's SQL). With a store captured by --from, what its \
            data would break (NULLs, rows, duplicates) is said too.

            Exit status: 0 when no error was found (warnings may be printed), 1 when one was, 3 when the \
            catalog or a plan cannot be read.

            Example:
              backstage catalog lint Cookbook
            """
    )

    @Argument(help: "The catalog folder.", completion: .directory)
    var directory: String

    @Flag(help: #"Print {"findings":[{"version","store","migration","table","severity","message"}]}."#)
    var json = false

    struct Result: Encodable { var findings: [LintFinding] }

    func run() async throws {
        let catalog = try CatalogFolder(at: URL(filePath: directory))
        let findings = try CatalogLint.findings(in: catalog)
        if json {
            try Output.json(Result(findings: findings))
        } else if findings.isEmpty {
            Output.out("\(catalog.manifest.app): \(catalog.manifest.versions.count) version(s), nothing found")
        } else {
            for finding in findings { Output.out(finding.description) }
        }
        if findings.contains(where: { $0.severity == .error }) { throw ExitCode(ExitStatus.checkFailed) }
    }
}
