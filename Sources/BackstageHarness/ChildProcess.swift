import Foundation

/// Runs `backstage` (or any program) as a child process: the harness's killed writers, killed
/// upgrades and simulated runs all go through here.
enum ChildProcess {
    struct Outcome {
        /// The exit status, or -1 when a signal ended the process.
        var status: Int32
        /// The signal that ended the process, if one did.
        var signal: Int32?
        var stderr: String

        var killedBySIGKILL: Bool { signal == SIGKILL }
    }

    /// Runs `arguments` to the end; with `killAfter`, sends SIGKILL after that many seconds.
    static func run(_ executable: URL, _ arguments: [String], killAfter delay: Double? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        if let delay {
            Thread.sleep(forTimeInterval: delay)
            kill(process.processIdentifier, SIGKILL)
        }
        // Read before waiting, so a chatty child never blocks on a full pipe.
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let killed = process.terminationReason == .uncaughtSignal
        return Outcome(status: killed ? -1 : process.terminationStatus, signal: killed ? process.terminationStatus : nil,
                       stderr: String(decoding: data, as: UTF8.self))
    }
}
