import Foundation

/// Where an app keeps its files: the user-visible documents folder and the private roots.
///
/// Every path Backstage touches is derived from these roots; nothing reads the real home
/// folder unless you ask for it with ``xdg(appName:environment:)``.
///
/// For example, to work on a simulated iOS app container in a test folder:
///
/// ```swift
/// let container = AppContainer.iOSSandbox(root: URL(filePath: "/tmp/MyApp"))
/// container.documents           // /tmp/MyApp/Documents
/// container.applicationSupport  // /tmp/MyApp/Library/Application Support
/// ```
public struct AppContainer: Sendable, Hashable, Codable {
    /// The folder the user sees (file sharing, the Files app, `~/Documents/<App>`).
    public var documents: URL
    /// Private app data, backed up, never shown: where databases belong.
    public var applicationSupport: URL
    /// Purgeable data that can be rebuilt.
    public var caches: URL
    /// Scratch space.
    public var temporary: URL

    /// Creates a container from explicit roots. The roots may live on different file systems.
    public init(documents: URL, applicationSupport: URL, caches: URL, temporary: URL) {
        self.documents = documents.standardizedFileURL
        self.applicationSupport = applicationSupport.standardizedFileURL
        self.caches = caches.standardizedFileURL
        self.temporary = temporary.standardizedFileURL
    }

    /// The layout of an iOS app sandbox under `root`: `Documents`, `Library/Application Support`,
    /// `Library/Caches` and `tmp`. Tests and fixtures use it to simulate an iOS app on Linux.
    public static func iOSSandbox(root: URL) -> AppContainer {
        AppContainer(
            documents: root.appending(path: "Documents", directoryHint: .isDirectory),
            applicationSupport: root.appending(path: "Library/Application Support", directoryHint: .isDirectory),
            caches: root.appending(path: "Library/Caches", directoryHint: .isDirectory),
            temporary: root.appending(path: "tmp", directoryHint: .isDirectory))
    }

    /// The XDG layout of a Linux desktop app named `appName`:
    /// `$XDG_DOCUMENTS_DIR/<App>` (or `~/Documents/<App>`), `$XDG_DATA_HOME/<App>`
    /// (or `~/.local/share/<App>`), `$XDG_CACHE_HOME/<App>` (or `~/.cache/<App>`) and
    /// `$TMPDIR/<App>` (or `/tmp/<App>`).
    ///
    /// - parameter environment: The variables to read, the process environment by default.
    ///   Pass your own dictionary to keep tests away from the real home folder.
    public static func xdg(appName: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> AppContainer {
        let home = URL(filePath: environment["HOME"] ?? "/", directoryHint: .isDirectory)
        func root(_ variable: String, default fallback: String) -> URL {
            if let value = environment[variable], value.hasPrefix("/") {
                return URL(filePath: value, directoryHint: .isDirectory)
            }
            return home.appending(path: fallback, directoryHint: .isDirectory)
        }
        let tmp = URL(filePath: environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp", directoryHint: .isDirectory)
        return AppContainer(
            documents: root("XDG_DOCUMENTS_DIR", default: "Documents").appending(path: appName, directoryHint: .isDirectory),
            applicationSupport: root("XDG_DATA_HOME", default: ".local/share").appending(path: appName, directoryHint: .isDirectory),
            caches: root("XDG_CACHE_HOME", default: ".cache").appending(path: appName, directoryHint: .isDirectory),
            temporary: tmp.appending(path: appName, directoryHint: .isDirectory))
    }

    /// The URL of a root.
    public subscript(root: ContainerRoot) -> URL {
        switch root {
        case .documents: documents
        case .applicationSupport: applicationSupport
        case .caches: caches
        case .temporary: temporary
        }
    }

    /// Backstage's own folder, `applicationSupport/.backstage`: the upgrade journal and quarantine.
    public var backstageDirectory: URL {
        applicationSupport.appending(path: ".backstage", directoryHint: .isDirectory)
    }

    /// Where files that must leave Documents but must not be deleted are kept:
    /// `applicationSupport/.backstage/quarantine`.
    public var quarantineDirectory: URL {
        backstageDirectory.appending(path: "quarantine", directoryHint: .isDirectory)
    }
}

/// One of the roots of an ``AppContainer``.
public enum ContainerRoot: String, Sendable, Hashable, Codable, CaseIterable {
    case documents
    case applicationSupport
    case caches
    case temporary
}

/// A path relative to one root of an ``AppContainer``, such as `documents` + `Notes.sqlite`.
///
/// Journals and plans record locations this way, so a container copied elsewhere still resumes.
/// In JSON a location is one string, the root then the path: `"applicationSupport/Accounts/42/UserData.sqlite"`.
public struct ContainerLocation: Sendable, Hashable, Codable, CustomStringConvertible {
    public var root: ContainerRoot
    /// A relative path with `/` separators, never starting with `/` and without `..`.
    public var path: String

    public init(_ root: ContainerRoot, _ path: String) {
        self.root = root
        self.path = path
    }

    /// Parses `"<root>/<path>"`, such as `"caches/Cache.sqlite"`; nil for an unknown root, an
    /// absolute path or a `..` component.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, let root = ContainerRoot(rawValue: String(first)) else { return nil }
        let path = parts.count > 1 ? String(parts[1]) : ""
        guard !path.hasPrefix("/"), !path.split(separator: "/").contains(".."), !path.contains("\0") else { return nil }
        self.init(root, path)
    }

    /// The absolute path in `container`, as a string (no URL parsing: used on the launch path).
    public func filePath(in container: AppContainer) -> String {
        let root = container[self.root].path
        if path.isEmpty { return root }
        return root.hasSuffix("/") ? root + path : root + "/" + path
    }

    /// The absolute path in `container`.
    public func url(in container: AppContainer) -> URL {
        path.isEmpty ? container[root] : container[root].appending(path: path)
    }

    public var description: String { path.isEmpty ? root.rawValue : "\(root.rawValue)/\(path)" }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let location = ContainerLocation(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                "\(text) is not a container location: write <root>/<relative path> with root documents, applicationSupport, caches or temporary"))
        }
        self = location
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
