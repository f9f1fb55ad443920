import BackstageHarness
import Foundation

/// The outcome of a child process.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var killedBySignal: Int32?
    public var stdout: String
    public var stderr: String
}

/// Runs a program to completion, capturing its output (through the harness's one runner).
/// With `killAfter`, it is killed with SIGKILL after that many seconds.
@discardableResult
public func runProcess(_ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
                       currentDirectory: URL? = nil, killAfter delay: Double? = nil) throws -> ProcessResult {
    let outcome = try ChildProcess.run(URL(filePath: executable), arguments, input: input, environment: environment,
                                       currentDirectory: currentDirectory, capturingOutput: true, killAfter: delay)
    return ProcessResult(status: outcome.status, killedBySignal: outcome.signal, stdout: outcome.stdout, stderr: outcome.stderr)
}

/// Runs a shell command as root-only set-up (mount, umount); throws when it fails.
public func shell(_ command: String) throws {
    let result = try runProcess("/bin/sh", ["-c", command])
    guard result.status == 0 else {
        throw NSError(domain: "shell", code: Int(result.status), userInfo: [NSLocalizedDescriptionKey: "\(command): \(result.stderr)"])
    }
}

/// The `backstage` executable built beside the test bundle.
public var backstageExecutable: String { builtExecutable("backstage") }

/// `backstage-simulate-child`, built beside the test bundle: `backstage`'s commands with their
/// crash hooks, the fixture states' killed writer and the disk recorder, asked for by a
/// `SimulateChildRequest` on its standard input.
public var simulateChildExecutable: String { builtExecutable("backstage-simulate-child") }

/// Runs `backstage-simulate-child` on `command` (recorded when `recorder` is given), capturing its output.
@discardableResult
public func runSimulateChild(_ command: SimulateChildRequest.Command, recorder: SimulateChildRequest.Recorder? = nil,
                             environment: [String: String]? = nil) throws -> ProcessResult {
    try runProcess(simulateChildExecutable, [], input: try SimulateChildRequest(command, recorder: recorder).encoded(),
                   environment: environment)
}

private func builtExecutable(_ name: String) -> String {
    let bundleDirectory = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [bundleDirectory, bundleDirectory.deletingLastPathComponent()] {
        let url = candidate.appending(path: name)
        if FileManager.default.isExecutableFile(atPath: url.path) { return url.path }
    }
    return bundleDirectory.appending(path: name).path
}
