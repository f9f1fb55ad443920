import ArgumentParser
import BackstageCLI
import BackstageExport
import BackstageHarness

/// `backstage import`, killed by SIGKILL at the request's boundary of its move-in.
struct CrashingImport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Run `backstage import`, killed by SIGKILL at the request's boundary.")

    /// The request's boundary, for the command the parser makes.
    @TaskLocal static var crashAt: SimulateChildRequest.ImportPoint?

    @OptionGroup var `import`: Import

    func run() async throws {
        guard let crashAt = Self.crashAt else { return try await `import`.run(boundaryHook: nil) }
        try await `import`.run(boundaryHook: { if SimulateChildRequest.ImportPoint($0) == crashAt { killedHere() } })
    }
}

extension SimulateChildRequest.ImportPoint {
    /// The import's own boundary: one case for each (the switch fails to compile when it gains one).
    init(_ boundary: ImportBoundary) {
        switch boundary {
        case .journaled: self = .journaled
        case .moved(let count): self = .moved(count)
        case .movedIn: self = .movedIn
        case .stagingRemoved: self = .stagingRemoved
        }
    }
}
