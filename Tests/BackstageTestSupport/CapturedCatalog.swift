import Foundation

/// A scratch folder holding the catalog `name` (the folder `<scratch>/<name>`), captured by
/// `backstage catalog init` from a store declared at `documents/<name>.sqlite`. `script` is Python
/// that makes the store: it is given the store's path, `<scratch>/Pulled/<name>.sqlite`, as `sys.argv[1]`.
public func capturedCatalog(_ name: String, storeMadeBy script: String) throws -> TemporaryDirectory {
    let scratch = try TemporaryDirectory()
    let pulled = scratch.url.appending(path: "Pulled")
    try FileManager.default.createDirectory(at: pulled, withIntermediateDirectories: true)
    let made = try PythonSQLite.run(script, [pulled.appending(path: "\(name).sqlite").path])
    guard made.status == 0 else { throw Failure("cannot make the \(name) store: \(made.stderr)") }
    let initialized = try runProcess(
        backstageExecutable,
        ["catalog", "init", name, "--from", "Pulled/\(name).sqlite", "--at", "documents/\(name).sqlite"],
        currentDirectory: scratch.url)
    guard initialized.status == 0 else { throw Failure("catalog init \(name) failed: \(initialized.stderr)") }
    return scratch
}
