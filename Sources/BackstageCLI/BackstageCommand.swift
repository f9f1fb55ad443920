import ArgumentParser
import Backstage
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

    /// Each names itself (`commandName`): a name argument-parser derives is `String(describing:)` of
    /// the type, three protocol casts each scanning every conformance in the binary, on every start.
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

/// `backstage SUBCOMMAND …` is parsed with a root of that subcommand without the root's `--version`
/// flag, which argument-parser reads anywhere on the line (a parent's options are parsed after its
/// subcommand's name too) and would take from `catalog init --version NAME`.
enum BackstageSubcommands {
    /// The root to parse `arguments` with: when they start with one of the subcommands' names, a
    /// root holding that subcommand alone. argument-parser reflects over every command of the tree
    /// it is given (each property's wrapper cast to its protocols, a scan of every conformance in
    /// the binary per new type): `backstage upgrade …` need not pay for the other ten commands.
    static func root(for arguments: [String]) -> any ParsableCommand.Type {
        guard let first = arguments.first,
            let command = BackstageCommand.subcommands.first(where: { $0.configuration.commandName == first })
        else { return BackstageCommand.self }
        return root(of: command)
    }

    private static func root<Command: ParsableCommand>(of command: Command.Type) -> any ParsableCommand.Type {
        BackstageSubcommand<Command>.self
    }
}

/// The root `backstage` with the one subcommand `Command`: `backstage upgrade …` parsed, helped and
/// reported as with every subcommand there.
struct BackstageSubcommand<Command: ParsableCommand>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: BackstageCommand.configuration.commandName, abstract: BackstageCommand.configuration.abstract,
            discussion: BackstageCommand.configuration.discussion, subcommands: [Command.self])
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

    /// Runs `invocation` as `backstage upgrade` runs the one its arguments parse to: what it prints,
    /// and the exit status it would exit with (the error said on standard error first).
    package static func status(
        of invocation: Upgrade.Invocation, boundaryHook: (@Sendable (CrashPoint) -> Void)?
    ) async -> Int32 {
        do {
            try await invocation.run(boundaryHook: boundaryHook)
            return 0
        } catch {
            return Output.report(error, root: Upgrade.self)
        }
    }
}
