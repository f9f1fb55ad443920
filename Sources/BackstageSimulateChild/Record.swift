import ArgumentParser

/// A command of this child run with its disk operations recorded, for the power-loss explorer.
struct Record: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a command of this child with its disk operations recorded (the power-loss runs).",
        discussion: "Exit status: the command's, or 3 when the recorder cannot be installed."
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

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("Name the command to run after --.") }
        if let cut, cut < 0 { throw ValidationError("--disk-cut must be 0 or more.") }
    }

    func run() async throws {
        // First thing, before any store is opened.
        try DiskRecorderInstall.install(
            log: log, cutBefore: cut, stash: stash, skippingFolderFsyncsEndingWith: skipFolderFsync)
        var recorded = try SimulateChild.parseAsRoot(command)
        if var recorded = recorded as? AsyncParsableCommand {
            try await recorded.run()
        } else {
            try recorded.run()
        }
    }
}
