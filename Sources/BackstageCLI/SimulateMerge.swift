import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct SimulateMerge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Combine the reports of a sharded simulation into one report, one JUnit file and one exit code.",
        discussion: """
            Reads the --json reports of `backstage simulate … --shard K/N`, one per shard, and prints the runs as \
            the unsharded simulation would have: in the matrix's order, with one verdict. Refuses reports of \
            another catalog, seed or matrix than the first, a shard missing or given twice, and a report made \
            without --shard, naming the file. Exits 1 when a run of any shard broke an invariant.

            Example:
              backstage simulate merge shard-1.json shard-2.json shard-3.json --junit simulate.xml
            """
    )

    @Argument(
        help: ArgumentHelp("The shards' reports (`simulate --shard K/N --json`).", valueName: "shard.json"),
        completion: .file(extensions: ["json"]))
    var reports: [String]

    @OptionGroup var output: SimulateOutput

    func validate() throws {
        guard !reports.isEmpty else { throw ValidationError("Give the shards' reports to merge.") }
    }

    func run() async throws {
        var shards: [(file: String, report: SimulationReport)] = []
        for file in reports {
            let data: Data
            do {
                data = try Data(contentsOf: URL(filePath: file))
            } catch {
                // A shell pattern that matches nothing (no shard's report downloaded) reaches merge as written.
                let missing = !FileManager.default.fileExists(atPath: file)
                throw SimulationMergeError(
                    file: file,
                    reason: .unreadable(
                        missing
                            ? "there is no such file (were the shards' reports downloaded here?)" : "it cannot be read")
                )
            }
            do {
                shards.append((file, try JSONDecoder().decode(SimulationReport.self, from: data)))
            } catch {
                throw SimulationMergeError(file: file, reason: .unreadable(Self.cause(error)))
            }
        }
        let merged = try SimulationReport.merge(shards)
        let title = "\(merged.command.contains("--paths") ? "every path" : "merged") from \(shards.count) shards"
        if let junit = output.junit { try Simulate.writeJUnit(merged, title: title, to: junit) }
        if output.json {
            try Output.json(merged)
        } else {
            Output.out(Simulate.render(merged, title: title))
        }
        if !merged.passed { throw ExitCode(ExitStatus.checkFailed) }
    }

    /// What is wrong with a report's JSON, in a few words.
    static func cause(_ error: Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "it has no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) is not what a report holds"
        default: "it is not JSON (a shard prints its report as JSON with --json)"
        }
    }
}
