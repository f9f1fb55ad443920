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
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, killAfter delay: Double? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
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

    struct Measurement {
        var status: Int32
        var seconds: Double
        /// Peak resident memory of the command (GNU time's %M), 0 when /usr/bin/time is missing.
        var peakBytes: Int64
        var stderr: String
    }

    /// Runs a command to the end under GNU `time`, which forks it from its own small process:
    /// a child's peak RSS counts its parent's memory at exec, so spawning it from here directly
    /// would report this process's size.
    static func measure(_ executable: URL, _ arguments: [String], environment: [String: String]?) throws -> Measurement {
        let time = "/usr/bin/time"
        let hasTime = FileManager.default.isExecutableFile(atPath: time)
        let report = FileManager.default.temporaryDirectory.appending(path: "backstage-time-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: report) }
        let start = ContinuousClock.now
        let outcome = try run(hasTime ? URL(filePath: time) : executable,
                              hasTime ? ["-f", "%M", "-o", report.path, executable.path] + arguments : arguments, environment: environment)
        let elapsed = ContinuousClock.now - start
        let kilobytes = (try? String(contentsOf: report, encoding: .utf8))?.split(separator: "\n").last.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        return Measurement(status: outcome.status, seconds: elapsed.seconds, peakBytes: kilobytes * 1024, stderr: outcome.stderr)
    }
}
