import ArgumentParser
import Foundation

/// The `backstage` command: configuration and `--version` only; one file per subcommand.
struct BackstageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backstage",
        abstract: "Keep an app's internal databases out of the folder its users can see.",
        discussion: """
            A container argument is the root of an iOS-style sandbox (Documents, Library/Application Support, \
            Library/Caches, tmp) unless --layout xdg --app NAME is given.

            Exit status: 0 success, 1 a check found a problem, 2 usage error, 3 operational failure.
            """,
        subcommands: subcommands
    )

    static let subcommands: [any ParsableCommand.Type] = [
        Demo.self, Audit.self, Relocate.self, Upgrade.self, Export.self, Import.self, Catalog.self,
        Inspect.self, Fixture.self, Simulate.self, Bench.self,
    ]

    // The version flag of the root only: argument-parser's (`configuration.version`) is listed in
    // every subcommand's help, where `catalog init --version NAME` is another option.
    @Flag(help: "Show the version.")
    var version = false

    func run() async throws {
        guard version else { throw CleanExit.helpRequest(self) }
        Output.out("0.1.0")
    }
}

/// `backstage SUBCOMMAND …` is parsed with this root: the same commands without the root's `--version`
/// flag, which argument-parser reads anywhere on the line (a parent's options are parsed after its
/// subcommand's name too) and would take from `catalog init --version NAME`.
struct BackstageSubcommands: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: BackstageCommand.configuration.commandName, abstract: BackstageCommand.configuration.abstract,
        discussion: BackstageCommand.configuration.discussion, subcommands: BackstageCommand.subcommands)

    /// The root to parse `arguments` with: this one when they start with one of the subcommands' names.
    static func root(for arguments: [String]) -> any ParsableCommand.Type {
        guard let first = arguments.first, BackstageCommand.subcommands.contains(where: { $0._commandName == first })
        else { return BackstageCommand.self }
        return BackstageSubcommands.self
    }
}

/// The command line's entry point, shared by `backstage` (Sources/BackstageMain) and the simulator's
/// child (Sources/BackstageSimulateChild), whose own root wraps these commands with its crash hooks.
package enum BackstageCommandLine {
    /// Parses `arguments` (nil: the process's, after its name) as commands of `root`, runs the
    /// command and exits with its status, the CLI contract's.
    package static func run(
        _ root: any ParsableCommand.Type = BackstageCommand.self, _ arguments: [String]? = nil
    ) async -> Never {
        let root =
            root == BackstageCommand.self
            ? BackstageSubcommands.root(for: arguments ?? Array(CommandLine.arguments.dropFirst())) : root
        do {
            var command = try root.parseAsRoot(arguments)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(Output.report(error, root: root))
        }
        exit(0)
    }
}
