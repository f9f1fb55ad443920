import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct CatalogCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a catalog: files present, every plan accounting for every table, shipped plans unchanged.",
        discussion: """
            Exits 1 with one line per problem: a catalog.json that is not valid (a syntax error, an unknown key, \
            a field without a usable value, two versions of one name), a schema file missing or unreadable, a table a store declares \
            that its schema lacks, a plan naming an unknown store or table, a table of the version before \
            that the plan neither keeps, moves, splits nor discards, a table the plan leaves where the next \
            version does not declare it, a store whose recorded schema differs from its fresh install's, a \
            shipped plan (any version but the newest) or migration changed since it was added, a data check \
            naming a store its version lacks, not compiling against its schema, or not one read-only query, \
            and every error `catalog lint` finds. Exits 3 when there is no catalog.json to read.

            Example:
              backstage catalog check Cookbook
            """
    )

    @Argument(help: "The catalog folder.", completion: .directory)
    var directory: String

    @Flag(help: #"Print {"problems":[{"version","message"}]}."#)
    var json = false

    struct Result: Encodable { var problems: [CatalogProblem] }

    func run() async throws {
        let catalog: CatalogFolder
        do {
            catalog = try CatalogFolder(at: URL(filePath: directory))
        } catch let error as CatalogError {
            // A catalog.json that is not valid is a problem the check found; one it cannot read is not.
            guard case .invalid = error else { throw error }
            if json {
                try Output.json(Result(problems: [CatalogProblem(version: "", message: error.description)]))
            } else {
                Output.out(error.description)
            }
            throw ExitCode(ExitStatus.checkFailed)
        }
        let problems = CatalogCheck.problems(in: catalog)
        if json {
            try Output.json(Result(problems: problems))
        } else if problems.isEmpty {
            Output.out("\(catalog.manifest.app): \(catalog.manifest.versions.count) version(s), no problem found")
        } else {
            for problem in problems { Output.out(problem.description) }
        }
        if !problems.isEmpty { throw ExitCode(ExitStatus.checkFailed) }
    }
}
