import Foundation

/// The outcome of a child process.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var killedBySignal: Int32?
    public var stdout: String
    public var stderr: String
}

/// Runs a program to completion, capturing its output.
@discardableResult
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, currentDirectory: URL? = nil) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(filePath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let currentDirectory { process.currentDirectoryURL = currentDirectory }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read before waiting so a chatty child never blocks on a full pipe.
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessResult(
        status: process.terminationReason == .exit ? process.terminationStatus : -1,
        killedBySignal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil,
        stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// Runs a shell command as root-only set-up (mount, umount); throws when it fails.
public func shell(_ command: String) throws {
    let result = try runProcess("/bin/sh", ["-c", command])
    guard result.status == 0 else {
        throw NSError(domain: "shell", code: Int(result.status), userInfo: [NSLocalizedDescriptionKey: "\(command): \(result.stderr)"])
    }
}

/// The `backstage` executable built beside the test bundle.
public var backstageExecutable: String {
    let bundleDirectory = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [bundleDirectory, bundleDirectory.deletingLastPathComponent()] {
        let url = candidate.appending(path: "backstage")
        if FileManager.default.isExecutableFile(atPath: url.path) { return url.path }
    }
    return bundleDirectory.appending(path: "backstage").path
}
