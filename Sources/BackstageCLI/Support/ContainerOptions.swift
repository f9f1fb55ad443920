import ArgumentParser
import Backstage
import Foundation

/// How a container is laid out on disk.
enum Layout: String, ExpressibleByArgument, CaseIterable {
    case ios
    case xdg
}

/// The container argument shared by the commands that work on one.
struct ContainerOptions: ParsableArguments {
    @Argument(help: "The root of an iOS-style app container (with --layout xdg: the home folder to use).", completion: .directory)
    var container: String?

    @Option(help: "The container layout: ios (Documents, Library/Application Support under the root) or xdg.")
    var layout: Layout = .ios

    @Option(help: "The app name of an xdg layout (the folder under ~/Documents, $XDG_DATA_HOME, ...).")
    var app: String?

    func validate() throws {
        switch layout {
        case .ios:
            guard container != nil else { throw ValidationError("Missing the container: the root of an iOS-style app container.") }
            if app != nil { throw ValidationError("--app is only used with --layout xdg.") }
        case .xdg:
            guard app != nil else { throw ValidationError("--layout xdg needs --app NAME.") }
        }
    }

    /// The container, with its root made absolute.
    ///
    /// - parameter creating: When true, a missing iOS-style root is created (import into a new container).
    func resolve(creating: Bool = false) throws -> AppContainer {
        switch layout {
        case .ios:
            let root = URL(filePath: container ?? ".", relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)).standardizedFileURL
            var isDirectory: ObjCBool = false
            if creating && !FileManager.default.fileExists(atPath: root.path) {
                try FileSystem().createDirectories(root.path)
            }
            guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError(description: "\(root.path) is not a folder")
            }
            return .iOSSandbox(root: root)
        case .xdg:
            var environment = ProcessInfo.processInfo.environment
            if let container {
                // A home folder given on the command line: ignore the process's XDG variables.
                environment = ["HOME": URL(filePath: container, relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)).standardizedFileURL.path]
            }
            return .xdg(appName: app ?? "", environment: environment)
        }
    }
}

/// This `backstage` executable, which the harness runs as its child (killed writers and upgrades).
enum Executable {
    static var url: URL { URL(filePath: "/proc/self/exe").resolvingSymlinksInPath() }
}
