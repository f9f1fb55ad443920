import ArgumentParser
import BackstageCLI
import BackstageHarness
import Foundation

/// The simulator's child: `backstage`'s commands that write, with what a crash test adds to them,
/// asked for by one ``SimulateChildRequest`` on standard input.
///
/// Exit status: the command's, as `backstage`'s (0, 1 a check failed, 2 usage, 3 operational
/// failure); 2 when the request cannot be read (a ``SimulateChildRequestError`` on standard error);
/// 3 when the disk recorder cannot be installed. Killed by SIGKILL at the crash point or the cut.
enum SimulateChild {
    static func run() async -> Never {
        guard CommandLine.arguments.count == 1 else {
            fail(
                "backstage-simulate-child takes no arguments (given: "
                    + "\(CommandLine.arguments.dropFirst().joined(separator: " "))): it reads one JSON request "
                    + "(SimulateChildRequest) on its standard input",
                status: 2)
        }
        let request: SimulateChildRequest
        do {
            request = try SimulateChildRequest.decode(try FileHandle.standardInput.readToEnd() ?? Data())
        } catch {
            fail("\(error)", status: 2)
        }
        if let recorder = request.recorder {
            // First thing, before any store is opened.
            do {
                try DiskRecorderInstall.install(
                    log: recorder.log, cutBefore: recorder.cutBefore, stash: recorder.stash,
                    skippingFolderFsyncsEndingWith: recorder.skippingFolderFsyncsEndingWith)
            } catch {
                fail("\(error)", status: 3)
            }
        }
        switch request.command {
        case .upgrade(let arguments, let crashAt):
            await CrashingUpgrade.$crashAt.withValue(crashAt) { await command(CrashingUpgrade.self, arguments) }
        case .upgradeChain(let chain, let crashAt):
            exit(await CrashingUpgrade.status(of: chain, crashAt: crashAt))
        case .relocate(let arguments, let crashAt):
            await CrashingRelocate.$crashAt.withValue(crashAt) { await command(CrashingRelocate.self, arguments) }
        case .import(let arguments, let crashAt):
            await CrashingImport.$crashAt.withValue(crashAt) { await command(CrashingImport.self, arguments) }
        case .fixtureWriter(let write):
            do {
                try FixtureWriter.write(write)
            } catch {
                fail("\(error)", status: 3)
            }
            exit(0)
        }
        exit(0)
    }

    /// Runs `type` (a command of `backstage` with its hook) on `arguments`, as `backstage` runs its
    /// commands; returns only for the compiler: `BackstageCommandLine` exits with the command's status.
    private static func command(_ type: any ParsableCommand.Type, _ arguments: [String]) async {
        await BackstageCommandLine.run(type, arguments)
    }

    /// Says why on standard error, as `backstage` does (`error: …`), and exits with `status`.
    static func fail(_ message: String, status: Int32) -> Never {
        warn("error: \(message)")
        exit(status)
    }
}

/// The crash hooks' kill: SIGKILL, which nothing in the process can catch or clean up after.
func killedHere() {
    kill(getpid(), SIGKILL)
}

/// Standard error, for what this process writes itself.
func warn(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
