import ArgumentParser
import BackstageCLI
import BackstageExport

extension ImportBoundary: ExpressibleByArgument {
    package init?(argument: String) { self.init(argument) }
}

/// `backstage import`, killed by SIGKILL at a boundary of its move-in.
struct CrashingImport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Run `backstage import`, killed by SIGKILL at --crash-at.")

    @OptionGroup var `import`: Import

    @Option(
        help: ArgumentHelp(
            "Kill this process with SIGKILL at this boundary of the move-in: journaled, moved:N, moved-in or staging-removed.",
            valueName: "boundary"))
    var crashAt: ImportBoundary?

    func run() async throws {
        guard let crashAt else { return try await `import`.run(boundaryHook: nil) }
        try await `import`.run(boundaryHook: { if $0 == crashAt { killedHere() } })
    }
}
