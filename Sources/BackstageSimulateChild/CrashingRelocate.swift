import ArgumentParser
import Backstage
import BackstageCLI

/// `backstage relocate`, killed by SIGKILL when a move reaches the request's phase.
struct CrashingRelocate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relocate", abstract: "Run `backstage relocate`, killed by SIGKILL at the request's phase.")

    /// The request's phase, for the command the parser makes.
    @TaskLocal static var crashAt: StepPhase?

    @OptionGroup var relocate: Relocate

    func run() async throws {
        guard let crashAt = Self.crashAt else { return try await relocate.run(phaseHook: nil) }
        try await relocate.run(phaseHook: { _, phase in if phase == crashAt { killedHere() } })
    }
}
