import ArgumentParser
import Foundation

/// The simulator's child: `backstage`'s commands that write, with what a crash test adds to them.
struct SimulateChild: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backstage-simulate-child",
        abstract: "Run backstage commands killed at a boundary, or with their disk operations recorded.",
        discussion: """
            The simulator's child: `backstage simulate`, the fixture states and the crash tests run it; each \
            subcommand is the `backstage` command of the same name with a --crash-at option, plus the killed \
            writer of the fixture states and the power-loss recorder. Exit status: the command's, as `backstage`'s.

            Example:
              backstage-simulate-child upgrade /tmp/notes-v1 --plan Fixtures/Notes/plans/v1-to-v2.json --crash-at relocate:committed
              backstage-simulate-child record --disk-log /tmp/disk.log -- relocate /tmp/notes-v1 --store Notes.sqlite
            """,
        subcommands: [
            CrashingUpgrade.self, CrashingRelocate.self, CrashingImport.self, FixtureWriter.self, Record.self,
        ]
    )
}

/// The crash hooks' kill: SIGKILL, which nothing in the process can catch or clean up after.
func killedHere() {
    kill(getpid(), SIGKILL)
}

/// Standard error, for the warning this process writes itself.
func warn(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
