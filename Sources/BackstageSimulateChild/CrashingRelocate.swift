import ArgumentParser
import Backstage
import BackstageCLI

extension StepPhase: ExpressibleByArgument {}

/// `backstage relocate`, killed by SIGKILL at a phase boundary of a move.
struct CrashingRelocate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relocate", abstract: "Run `backstage relocate`, killed by SIGKILL at --crash-at.")

    @OptionGroup var relocate: Relocate

    @Option(help: ArgumentHelp("Kill this process with SIGKILL when a move reaches this phase.", valueName: "phase"))
    var crashAt: StepPhase?

    func run() async throws {
        guard let crashAt else { return try await relocate.run(phaseHook: nil) }
        try await relocate.run(phaseHook: { _, phase in if phase == crashAt { killedHere() } })
    }
}
