import BackstageSystem
import Foundation

/// Where an app keeps its files: the user-visible documents folder, the private roots, and the
/// shared containers of its App Groups.
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
///
/// A store that widgets and extensions open lives in an App Group's shared container. Name the
/// group's folder (on iOS, `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`;
/// on Linux, any folder the processes share) and plans can move stores there:
///
/// ```swift
/// let shared = URL(filePath: "/tmp/Shared/group.com.example.notes")
/// let app = AppContainer.iOSSandbox(root: URL(filePath: "/tmp/MyApp"))
///     .addingAppGroup("group.com.example.notes", at: shared)
/// let notes = ContainerLocation(.appGroup("group.com.example.notes"), "Notes.sqlite")
/// notes.url(in: app)  // /tmp/Shared/group.com.example.notes/Notes.sqlite
/// ```
public struct AppContainer: Sendable, Hashable, Codable {
    /// The folder the user sees (file sharing, the Files app, `~/Documents/<App>`).
    public var documents: URL { didSet { paths.documents = Paths.native(documents.path) } }
    /// Private app data, backed up, never shown: where databases belong.
    public var applicationSupport: URL { didSet { paths.setApplicationSupport(applicationSupport.path) } }
    /// Purgeable data that can be rebuilt.
    public var caches: URL { didSet { paths.caches = Paths.native(caches.path) } }
    /// Scratch space.
    public var temporary: URL { didSet { paths.temporary = Paths.native(temporary.path) } }
    /// The shared containers of the app's App Groups, by group identifier
    /// (`group.com.example.notes`): folders the app shares with its widgets and extensions.
    public private(set) var appGroups: [String: URL] = [:] {
        didSet { paths.appGroups = appGroups.mapValues { Paths.native($0.path) } }
    }

    /// The databases in Documents the app declares as its stores (``StoreDeclarations``); every
    /// other database there is the user's document. None by default: add them with
    /// ``declaringStores(_:)``, from the app's plan, catalog or store descriptions.
    public internal(set) var declaredStores = StoreDeclarations.none

    /// The roots as path strings, kept with the URLs: the launch check builds paths without
    /// asking a URL for its path (which allocates and decodes every time).
    private struct Paths: Sendable, Hashable {
        var documents = "", applicationSupport = "", caches = "", temporary = ""
        var appGroups: [String: String] = [:]
        /// `applicationSupport/.backstage/journal.json` and `.../launch`, read at every launch.
        var journal = "", launchRecord = ""

        /// A native, contiguous UTF-8 copy: handed to C without a conversion at every call.
        static func native(_ path: String) -> String {
            var copy = path
            copy.makeContiguousUTF8()
            return copy
        }

        mutating func setApplicationSupport(_ path: String) {
            applicationSupport = Self.native(path)
            let backstage = (path.hasSuffix("/") ? path : path + "/") + ".backstage/"
            journal = Self.native(backstage + "journal.json")
            launchRecord = Self.native(backstage + "launch")
        }
    }
    private var paths = Paths()

    /// `applicationSupport/.backstage/journal.json`, as a string.
    package var journalPath: String { paths.journal }
    /// `applicationSupport/.backstage/launch`, as a string.
    package var launchRecordPath: String { paths.launchRecord }

    /// Creates a container from explicit roots. The roots may live on different file systems.
    public init(documents: URL, applicationSupport: URL, caches: URL, temporary: URL, appGroups: [String: URL] = [:]) {
        self.documents = documents.standardizedFileURL
        self.applicationSupport = applicationSupport.standardizedFileURL
        self.caches = caches.standardizedFileURL
        self.temporary = temporary.standardizedFileURL
        paths = Paths(
            documents: Paths.native(self.documents.path), caches: Paths.native(self.caches.path),
            temporary: Paths.native(self.temporary.path))
        paths.setApplicationSupport(self.applicationSupport.path)
        for (identifier, folder) in appGroups { self = addingAppGroup(identifier, at: folder) }
    }

    /// This container with the shared container of the App Group `identifier` at `folder`.
    ///
    /// - precondition: `identifier` is an App Group identifier: it starts with `group.` and
    ///   has no `/` (see ``ContainerRoot/appGroup(_:)``).
    public func addingAppGroup(_ identifier: String, at folder: URL) -> AppContainer {
        precondition(
            ContainerRoot.isAppGroupIdentifier(identifier),
            "\(identifier) is not an App Group identifier: it starts with group. and has no /")
        var container = self
        container.appGroups[identifier] = folder.standardizedFileURL
        return container
    }

    /// True when `root` is defined here: always for the standard roots,
    /// and for an App Group's when it was added with ``addingAppGroup(_:at:)``.
    public func defines(_ root: ContainerRoot) -> Bool {
        root.kind != .appGroup || paths.appGroups[root.rawValue] != nil
    }

    /// The path of a root, as a string (no URL work: used on the launch path).
    ///
    /// - precondition: An App Group's root is defined (``defines(_:)``).
    public func path(of root: ContainerRoot) -> String {
        switch root.kind {
        case .documents: return paths.documents
        case .applicationSupport: return paths.applicationSupport
        case .caches: return paths.caches
        case .temporary: return paths.temporary
        case .appGroup:
            guard let path = paths.appGroups[root.rawValue] else {
                preconditionFailure(
                    "the App Group \(root.rawValue) has no folder in this container: add it with addingAppGroup(_:at:)")
            }
            return path
        }
    }

    /// Every root of this container: the four standard ones, then its App Groups by identifier.
    public var roots: [ContainerRoot] {
        ContainerRoot.standard + appGroups.keys.sorted().map(ContainerRoot.appGroup)
    }

    private enum CodingKeys: String, CodingKey {
        case documents, applicationSupport, caches, temporary, appGroups
    }

    public init(from decoder: Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            documents: try values.decode(URL.self, forKey: .documents),
            applicationSupport: try values.decode(URL.self, forKey: .applicationSupport),
            caches: try values.decode(URL.self, forKey: .caches),
            temporary: try values.decode(URL.self, forKey: .temporary))
        for (identifier, folder) in try values.decodeIfPresent([String: URL].self, forKey: .appGroups) ?? [:] {
            guard ContainerRoot.isAppGroupIdentifier(identifier) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .appGroups, in: values,
                    debugDescription: "\(identifier) is not an App Group identifier: it starts with group. and has no /"
                )
            }
            self = addingAppGroup(identifier, at: folder)
        }
    }

    /// The layout of an iOS app sandbox under `root`: `Documents`, `Library/Application Support`,
    /// `Library/Caches` and `tmp`. Tests and fixtures use it to simulate an iOS app on Linux.
    ///
    /// - parameter root: The folder standing for the app's sandbox.
    /// - parameter appGroups: App Group identifiers whose shared containers to simulate, each at
    ///   `root/Shared/AppGroup/<identifier>` (iOS keeps them outside the sandbox; a simulated
    ///   app keeps them with it, so a copied fixture carries them).
    public static func iOSSandbox(root: URL, appGroups: [String] = []) -> AppContainer {
        var container = AppContainer(
            documents: root.appending(path: "Documents", directoryHint: .isDirectory),
            applicationSupport: root.appending(path: "Library/Application Support", directoryHint: .isDirectory),
            caches: root.appending(path: "Library/Caches", directoryHint: .isDirectory),
            temporary: root.appending(path: "tmp", directoryHint: .isDirectory))
        for identifier in appGroups {
            container = container.addingAppGroup(
                identifier, at: root.appending(path: "Shared/AppGroup/\(identifier)", directoryHint: .isDirectory))
        }
        return container
    }

    /// The XDG layout of a Linux desktop app named `appName`:
    /// `$XDG_DOCUMENTS_DIR/<App>` (or `~/Documents/<App>`), `$XDG_DATA_HOME/<App>`
    /// (or `~/.local/share/<App>`), `$XDG_CACHE_HOME/<App>` (or `~/.cache/<App>`) and
    /// `$TMPDIR/<App>` (or `/tmp/<App>`).
    ///
    /// - parameter appName: The folder name under each XDG root.
    /// - parameter environment: The variables to read, the process environment by default.
    ///   Pass your own dictionary to keep tests away from the real home folder.
    public static func xdg(
        appName: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> AppContainer {
        let home = URL(filePath: environment["HOME"] ?? "/", directoryHint: .isDirectory)
        func root(_ variable: String, default fallback: String) -> URL {
            if let value = environment[variable], value.hasPrefix("/") {
                return URL(filePath: value, directoryHint: .isDirectory)
            }
            return home.appending(path: fallback, directoryHint: .isDirectory)
        }
        let tmp = URL(
            filePath: environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp",
            directoryHint: .isDirectory)
        return AppContainer(
            documents: root("XDG_DOCUMENTS_DIR", default: "Documents").appending(
                path: appName, directoryHint: .isDirectory),
            applicationSupport: root("XDG_DATA_HOME", default: ".local/share").appending(
                path: appName, directoryHint: .isDirectory),
            caches: root("XDG_CACHE_HOME", default: ".cache").appending(path: appName, directoryHint: .isDirectory),
            temporary: tmp.appending(path: appName, directoryHint: .isDirectory))
    }

    /// The URL of a root.
    ///
    /// - precondition: An App Group's root is defined (``defines(_:)``). The upgrader and the
    ///   relocator check every root of a plan before they resolve any, and throw
    ///   ``BackstageError/Cause/undefinedAppGroup`` or ``BackstageError/Cause/undefinedAppGroup``.
    public subscript(root: ContainerRoot) -> URL {
        switch root.kind {
        case .documents: return documents
        case .applicationSupport: return applicationSupport
        case .caches: return caches
        case .temporary: return temporary
        case .appGroup:
            guard let folder = appGroups[root.rawValue] else {
                preconditionFailure(
                    "the App Group \(root.rawValue) has no folder in this container: add it with addingAppGroup(_:at:)")
            }
            return folder
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

/// One of the roots of an ``AppContainer``: Documents, Application Support, Caches, the
/// temporary folder, or the shared container of an App Group.
///
/// In locations and plans a root is a word: `documents`, `applicationSupport`, `caches`,
/// `temporary`, or the App Group's identifier, `group.com.example.notes`.
public struct ContainerRoot: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// `documents`, `applicationSupport`, `caches`, `temporary` or an App Group identifier.
    public let rawValue: String
    /// Which root, decided once: the launch check resolves roots without comparing strings.
    package enum Kind: UInt8, Sendable, Hashable { case documents, applicationSupport, caches, temporary, appGroup }
    package let kind: Kind

    /// A standard root's name or an App Group identifier (`group.` then a name without `/`);
    /// nil otherwise.
    public init?(rawValue: String) {
        if let standard = Self.standard.first(where: { $0.rawValue == rawValue }) {
            self = standard
        } else if Self.isAppGroupIdentifier(rawValue) {
            self.init(rawValue, .appGroup)
        } else {
            return nil
        }
    }

    private init(_ name: String, _ kind: Kind) {
        rawValue = name
        self.kind = kind
    }

    /// The folder the user sees.
    public static let documents = ContainerRoot("documents", .documents)
    /// Private app data, backed up, never shown.
    public static let applicationSupport = ContainerRoot("applicationSupport", .applicationSupport)
    /// Purgeable data.
    public static let caches = ContainerRoot("caches", .caches)
    /// Scratch space.
    public static let temporary = ContainerRoot("temporary", .temporary)
    /// The four roots every container has, App Groups aside.
    public static let standard: [ContainerRoot] = [.documents, .applicationSupport, .caches, .temporary]

    /// The standard root of `kind`.
    ///
    /// - precondition: `kind` is not ``Kind/appGroup``.
    package init(standard kind: Kind) {
        switch kind {
        case .documents: self = .documents
        case .applicationSupport: self = .applicationSupport
        case .caches: self = .caches
        case .temporary: self = .temporary
        case .appGroup: preconditionFailure("an App Group is no standard root")
        }
    }

    /// The shared container of the App Group `identifier`, such as `group.com.example.notes`.
    ///
    /// - precondition: `identifier` starts with `group.` and has no `/`.
    public static func appGroup(_ identifier: String) -> ContainerRoot {
        precondition(
            isAppGroupIdentifier(identifier),
            "\(identifier) is not an App Group identifier: it starts with group. and has no /")
        return ContainerRoot(identifier, .appGroup)
    }

    /// The App Group identifier when this is a shared container, nil for a standard root.
    public var appGroupIdentifier: String? { kind == .appGroup ? rawValue : nil }

    /// True for `group.` followed by at least one character, none of them `/` or NUL.
    public static func isAppGroupIdentifier(_ text: String) -> Bool {
        text.hasPrefix("group.") && text.count > 6 && !text.contains("/") && !text.contains("\0")
    }

    public var description: String { rawValue }

    /// The kind decides for the standard roots (each has one name); App Groups compare their identifiers.
    public static func == (a: ContainerRoot, b: ContainerRoot) -> Bool {
        a.kind == b.kind && (a.kind != .appGroup || a.rawValue == b.rawValue)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        if kind == .appGroup { hasher.combine(rawValue) }
    }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let root = ContainerRoot(rawValue: text) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "\(text) is not a container root: write documents, applicationSupport, caches, temporary or an App Group identifier (group.…)"
                ))
        }
        self = root
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A path relative to one root of an ``AppContainer``, such as `documents` + `Notes.sqlite`.
///
/// Journals and plans record locations this way, so a container copied elsewhere still resumes.
/// In JSON a location is one string, the root then the path: `"applicationSupport/Accounts/42/UserData.sqlite"`,
/// or, in an App Group's shared container, `"group.com.example.notes/Notes.sqlite"`.
public struct ContainerLocation: Sendable, Hashable, Codable, CustomStringConvertible {
    public var root: ContainerRoot
    /// A relative path with `/` separators, never starting with `/` and without `..`.
    public var path: String

    public init(_ root: ContainerRoot, _ path: String) {
        self.root = root
        self.path = path
    }

    /// Parses `"<root>/<path>"`, such as `"caches/Cache.sqlite"` or
    /// `"group.com.example.notes/Notes.sqlite"`; nil for an unknown root, an absolute path or a
    /// `..` component.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, let root = ContainerRoot(rawValue: String(first)) else { return nil }
        let path = parts.count > 1 ? String(parts[1]) : ""
        guard !path.hasPrefix("/"), !path.split(separator: "/").contains(".."), !path.contains("\0") else { return nil }
        self.init(root, path)
    }

    /// The absolute path in `container`, as a string (no URL parsing: used on the launch path).
    public func filePath(in container: AppContainer) -> String {
        let root = container.path(of: self.root)
        if path.isEmpty { return root }
        return root.hasSuffix("/") ? root + path : root + "/" + path
    }

    /// Calls `body` with the absolute path in `container` as a C string built on the stack: the
    /// launch check's `lstat`s and `open`s allocate nothing for their paths. Nil when the path
    /// does not fit in `PATH_MAX`.
    func withFilePath<R>(in container: AppContainer, _ body: (UnsafePointer<CChar>) -> R) -> R? {
        // The strings' bytes in place (native strings, what a container and a plan hold): no copy,
        // no retain; a bridged one is copied.
        func withBytes<T>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
            if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
            var copy = text
            return copy.withUTF8(body)
        }
        return withBytes(container.path(of: root)) { rootBytes in
            withBytes(path) { pathBytes in
                let count = rootBytes.count + 1 + pathBytes.count + 1
                guard count <= Int(PATH_MAX) else { return nil }
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
                    var end = rootBytes.count
                    UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(rootBytes))
                    if !pathBytes.isEmpty {
                        if rootBytes.last != UInt8(ascii: "/") { buffer[end] = UInt8(ascii: "/"); end += 1 }
                        UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[end...])
                            .copyMemory(from: UnsafeRawBufferPointer(pathBytes))
                        end += pathBytes.count
                    }
                    buffer[end] = 0
                    return buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: count) { body($0) }
                }
            }
        }
    }

    /// The longest file name a store's database may have, in bytes: a file name holds at most 255
    /// (`NAME_MAX`), and the store's rollback journal, `Name-journal`, needs 8 more.
    public static let longestStoreName = 247

    /// Why the location cannot name a SQLite store for its length: its file name is over
    /// ``longestStoreName`` bytes, so SQLite could not make its `-journal` beside it (and over 255, not
    /// even the file). Nil when the name fits. Plans, `--store` and a catalog's `--at` are refused
    /// with it before anything is opened.
    public var storeNameTooLong: String? {
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        let bytes = name.utf8.count
        guard bytes > Self.longestStoreName else { return nil }
        return
            "names \(self), whose file name is \(bytes) bytes: a store's file name can be at most "
            + "\(Self.longestStoreName) bytes (a file name holds 255, and its -journal sidecar needs 8 more)"
    }

    /// The absolute path in `container`.
    public func url(in container: AppContainer) -> URL {
        path.isEmpty ? container[root] : container[root].appending(path: path)
    }

    public var description: String { path.isEmpty ? root.rawValue : "\(root.rawValue)/\(path)" }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let location = ContainerLocation(text) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "\(text) is not a container location: write <root>/<relative path> with root documents, applicationSupport, caches, temporary or an App Group identifier (group.…)"
                ))
        }
        self = location
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
