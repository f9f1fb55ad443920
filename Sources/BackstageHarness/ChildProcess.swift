import Foundation

/// Runs `backstage` (or any program) as a child process: the harness's killed writers, killed
/// upgrades and simulated runs, and the tests' commands, all go through here.
package enum ChildProcess {
    package struct Outcome: Sendable {
        /// The exit status, or -1 when a signal ended the process.
        package var status: Int32
        /// The signal that ended the process, if one did.
        package var signal: Int32?
        /// What it printed on stdout, when asked for; else empty.
        package var stdout: String
        package var stderr: String

        package var killedBySIGKILL: Bool { signal == SIGKILL }
    }

    /// `backstage-simulate-child`, the harness's own executable beside `backstage`: the commands that
    /// write with their crash hooks, the fixture states' killed writer and the disk recorder, which
    /// `backstage` does not carry. It reads one ``SimulateChildRequest`` on its standard input.
    package static func simulateChild(beside backstage: URL) -> URL {
        backstage.deletingLastPathComponent().appending(path: "backstage-simulate-child")
    }

    /// Runs `backstage-simulate-child` beside `backstage` on `request`; with `killAfter`, sends
    /// SIGKILL after that many seconds.
    ///
    /// - throws: ``SimulationError/childNotFound(path:)`` when it is not there.
    package static func run(
        _ request: SimulateChildRequest, beside backstage: URL, environment: [String: String]? = nil,
        capturingOutput: Bool = false, killAfter delay: Double? = nil
    ) throws -> Outcome {
        let child = simulateChild(beside: backstage)
        guard FileManager.default.isExecutableFile(atPath: child.path) else {
            throw SimulationError.childNotFound(path: child.path)
        }
        return try run(
            child, [], input: try request.encoded(), environment: environment, capturingOutput: capturingOutput,
            killAfter: delay)
    }

    /// Runs `arguments` to the end, stdin closed (or reading `input`); with `killAfter`, sends
    /// SIGKILL after that many seconds. stdout is kept when `capturingOutput`, else discarded. Both
    /// pipes are drained at once, so a child that fills one while the other is read never blocks.
    package static func run(
        _ executable: URL, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        currentDirectory: URL? = nil, capturingOutput: Bool = false, killAfter delay: Double? = nil
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        process.standardInput = FileHandle.nullDevice
        if let input {
            // A file, not a pipe: a child that exits before reading it cannot SIGPIPE this process.
            // Its name goes once it is open; the child reads the open file.
            let file = FileManager.default.temporaryDirectory.appending(
                path: "backstage-input-\(UUID().uuidString.prefix(8))")
            try input.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            process.standardInput = try FileHandle(forReadingFrom: file)
        }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = capturingOutput ? output : FileHandle.nullDevice
        process.standardError = errors
        // Its end, signalled: Foundation's waitUntilExit on Linux polls the calling thread's run loop
        // every 50 ms, and on the main thread (an XCTest test driving a Simulator) each child that had
        // ended waited out the poll: 55 ms for `backstage --version` against 9-12 ms this way.
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let drained = DispatchGroup()
        let outData = Drained(), errData = Drained()
        for (pipe, box) in capturingOutput ? [(output, outData), (errors, errData)] : [(errors, errData)] {
            DispatchQueue.global().async(group: drained) { box.data = pipe.fileHandleForReading.readDataToEndOfFile() }
        }
        if let delay {
            Thread.sleep(forTimeInterval: delay)
            kill(process.processIdentifier, SIGKILL)
        }
        drained.wait()
        exited.wait()
        process.waitUntilExit()  // returns at once: the handler runs once the status is set
        let killed = process.terminationReason == .uncaughtSignal
        return Outcome(
            status: killed ? -1 : process.terminationStatus, signal: killed ? process.terminationStatus : nil,
            stdout: String(decoding: outData.data, as: UTF8.self), stderr: String(decoding: errData.data, as: UTF8.self)
        )
    }

    /// The bytes a pipe gave, written by one reader thread and read after it finished.
    private final class Drained: @unchecked Sendable {
        var data = Data()
    }

    struct Measurement {
        var status: Int32
        var seconds: Double
        /// Peak resident memory of the command (GNU time's %M), 0 when /usr/bin/time is missing.
        var peakBytes: Int64
        /// What the command read from the disk (GNU time's %I, the kernel's `ru_inblock` in
        /// 512-byte blocks): near 0 for a run the page cache served. Nil when /usr/bin/time is
        /// missing or wrote no figures.
        var diskReadBytes: Int64?
        var stdout: String = ""
        var stderr: String
    }

    /// The figures of GNU time's `-f "%M %I"` report: its last line, exactly two integers (a failed
    /// command's "Command exited with non-zero status" line comes before it); nil otherwise.
    package static func timeFigures(_ text: String) -> (peakBytes: Int64, diskReadBytes: Int64)? {
        guard let line = text.split(separator: "\n").last else { return nil }
        let numbers = line.split(separator: " ").map { Int64($0) }
        guard numbers.count == 2, let kilobytes = numbers[0], let blocks = numbers[1] else { return nil }
        return (kilobytes * 1024, blocks * 512)
    }

    /// Runs a command to the end under GNU `time`, which forks it from its own small process:
    /// a child's peak RSS counts its parent's memory at exec, so spawning it from here directly
    /// would report this process's size.
    static func measure(
        _ executable: URL, _ arguments: [String], environment: [String: String]?, capturingOutput: Bool = false
    ) throws -> Measurement {
        let time = "/usr/bin/time"
        let hasTime = FileManager.default.isExecutableFile(atPath: time)
        let report = FileManager.default.temporaryDirectory.appending(
            path: "backstage-time-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: report) }
        let start = ContinuousClock.now
        let outcome = try run(
            hasTime ? URL(filePath: time) : executable,
            hasTime ? ["-f", "%M %I", "-o", report.path, executable.path] + arguments : arguments,
            environment: environment, capturingOutput: capturingOutput
        )
        let elapsed = ContinuousClock.now - start
        let figures = hasTime ? Self.timeFigures((try? String(contentsOf: report, encoding: .utf8)) ?? "") : nil
        return Measurement(
            status: outcome.status, seconds: elapsed.seconds, peakBytes: figures?.peakBytes ?? 0,
            diskReadBytes: figures?.diskReadBytes, stdout: outcome.stdout, stderr: outcome.stderr)
    }
}
