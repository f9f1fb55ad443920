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
    @Argument(
        help: "The root of an iOS-style app container (with --layout xdg: the home folder to use).",
        completion: .directory)
    var container: String?

    @Option(help: "The container layout: ios (Documents, Library/Application Support under the root) or xdg.")
    var layout: Layout = .ios

    @Option(help: "The app name of an xdg layout (the folder under ~/Documents, $XDG_DATA_HOME, ...).")
    var app: String?

    func validate() throws {
        switch layout {
        case .ios:
            guard container != nil else {
                throw ValidationError("Missing the container: the root of an iOS-style app container.")
            }
            if app != nil { throw ValidationError("--app is only used with --layout xdg.") }
        case .xdg:
            guard app != nil else { throw ValidationError("--layout xdg needs --app NAME.") }
        }
    }

    /// The container, with its root made absolute. A missing root is an error, never created.
    func resolve() throws -> AppContainer {
        switch layout {
        case .ios: return try Self.iOSContainer(at: container ?? ".")
        case .xdg:
            var environment = ProcessInfo.processInfo.environment
            if let container {
                // A home folder given on the command line: ignore the process's XDG variables.
                environment = [
                    "HOME": URL(
                        filePath: container,
                        relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
                    ).standardizedFileURL.path
                ]
            }
            return .xdg(appName: app ?? "", environment: environment)
        }
    }
}

extension ContainerOptions {
    /// The iOS-style container rooted at `path` (relative to the working directory), with the App
    /// Groups a simulated container keeps under `Shared/AppGroup`. A missing root is an error.
    static func iOSContainer(at path: String) throws -> AppContainer {
        let root = URL(
            filePath: path,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw CLIError(description: "\(root.path) is not a folder")
        }
        // A simulated container keeps its App Groups with it (fixtures write them there).
        let shared = root.appending(path: "Shared/AppGroup", directoryHint: .isDirectory)
        let groups = ((try? FileManager.default.contentsOfDirectory(atPath: shared.path)) ?? []).filter(
            ContainerRoot.isAppGroupIdentifier
        ).sorted()
        return .iOSSandbox(root: root, appGroups: groups)
    }
}

/// The shared containers of App Groups, for the commands whose stores can live there.
struct AppGroupOptions: ParsableArguments {
    @Option(
        name: .customLong("app-group"),
        help: ArgumentHelp(
            "The shared container of an App Group, which plans and --to name by its identifier (repeatable). FOLDER defaults to CONTAINER/Shared/AppGroup/ID (where fixtures write them; found without the option when it exists), or $XDG_DATA_HOME/ID with --layout xdg.",
            valueName: "ID=FOLDER"))
    var appGroups: [String] = []

    func validate() throws {
        for group in appGroups {
            let (identifier, folder) = Self.split(group)
            guard ContainerRoot.isAppGroupIdentifier(identifier) else {
                throw ValidationError(
                    "--app-group \(group): \(identifier) is not an App Group identifier, which starts with group. "
                        + "(group.com.example.app=FOLDER).")
            }
            if folder?.isEmpty == true { throw ValidationError("--app-group \(group): the folder is empty.") }
        }
    }

    private static func split(_ text: String) -> (identifier: String, folder: String?) {
        guard let equals = text.firstIndex(of: "=") else { return (text, nil) }
        return (String(text[..<equals]), String(text[text.index(after: equals)...]))
    }

    /// `container` with the groups given; a missing FOLDER is `CONTAINER/Shared/AppGroup/ID`
    /// (ios) or `$XDG_DATA_HOME/ID` (xdg).
    ///
    /// - throws: ``CLIError`` naming `--app-group` when a group's folder does not exist: a typo
    ///   never creates a shared container.
    func adding(to container: AppContainer, layout: Layout) throws -> AppContainer {
        var container = container
        let workingDirectory = URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        for group in appGroups {
            let (identifier, folder) = Self.split(group)
            let standard =
                layout == .ios
                ? container.documents.deletingLastPathComponent().appending(
                    path: "Shared/AppGroup/\(identifier)", directoryHint: .isDirectory)
                : container.applicationSupport.deletingLastPathComponent().appending(
                    path: identifier, directoryHint: .isDirectory)
            let url =
                (folder.map { URL(filePath: $0, directoryHint: .isDirectory, relativeTo: workingDirectory) } ?? standard)
                .standardizedFileURL
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw CLIError(
                    description:
                        "--app-group \(group): \(url.path) is not a folder; give the App Group's existing shared container"
                )
            }
            container = container.addingAppGroup(identifier, at: url)
        }
        return container
    }
}
