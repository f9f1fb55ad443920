import ArgumentParser
import BackstageCLI
import Foundation

// `backstage-simulate-child`: the simulator's power-loss child. It installs the disk recorder (an
// explicit call, never the environment), then runs the `backstage` command after `--` as
// `backstage` would. Built beside `backstage`, in every configuration; no library an app links,
// and not `backstage` itself, carries the recorder.
struct SimulateChild: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backstage-simulate-child",
        abstract: "Run a backstage command with its disk operations recorded (the simulator's power-loss child).",
        discussion: """
            Not for direct use: `backstage simulate --power-loss` and the harness's PowerLossRun run it. \
            Exit status: the command's, or 3 when the recorder cannot be installed.
            """
    )

    @Option(name: .customLong("disk-log"), help: "Append one line per disk operation to this file.")
    var log: String

    @Option(name: .customLong("disk-stash"), help: "Keep here every file an operation unlinks or replaces.")
    var stash: String?

    @Option(name: .customLong("disk-cut"), help: "Kill this process with SIGKILL before operation N (from 0).")
    var cut: Int?

    @Option(
        name: .customLong("skip-folder-fsync"),
        help: "Do not make folder fsyncs whose path ends with this (a planted bug for the explorer's tests).")
    var skipFolderFsync: String?

    @Argument(parsing: .postTerminator, help: "The backstage command and its arguments, after --.")
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("Name the backstage command to run after --.") }
        if let cut, cut < 0 { throw ValidationError("--disk-cut must be 0 or more.") }
    }
}

do {
    let child = try SimulateChild.parse()
    try DiskRecorderInstall.install(
        log: child.log, cutBefore: child.cut, stash: child.stash, skippingFolderFsyncsEndingWith: child.skipFolderFsync)
    await BackstageCommandLine.run(child.command)
} catch let error as DiskRecorderInstall.Failure {
    FileHandleOutput.error("backstage-simulate-child: \(error)")
    exit(3)
} catch {
    SimulateChild.exit(withError: error)
}
