import Backstage
import Foundation

/// A fresh folder per test, removed when the value is released.
public final class TemporaryDirectory: @unchecked Sendable {
    public let url: URL

    /// Creates a folder under `base` (the system temporary folder by default).
    public init(base: URL = FileManager.default.temporaryDirectory, prefix: String = "backstage-test") throws {
        url = base.appending(path: "\(prefix)-\(UUID().uuidString.prefix(12))", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public var path: String { url.path }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A simulated iOS app container in a temporary folder. Its app declares its stores in Documents
/// (`Notes.sqlite` unless told otherwise), as a real app's plan would: any other database there is
/// the user's.
public final class TestContainer: @unchecked Sendable {
    public let directory: TemporaryDirectory
    public let container: AppContainer
    /// The folder and stores it was made with, to clone it; nil for explicit roots.
    private let origin: (base: URL, stores: [String])?

    public init(base: URL = FileManager.default.temporaryDirectory, declaring stores: [String] = ["Notes.sqlite"]) throws {
        origin = (base, stores)
        directory = try TemporaryDirectory(base: base)
        container = AppContainer.iOSSandbox(root: directory.url).declaringStores(StoreDeclarations(stores))
        for root in ContainerRoot.standard {
            try FileManager.default.createDirectory(at: container[root], withIntermediateDirectories: true)
        }
    }

    /// A container whose roots are given explicitly (for cross-device tests).
    public init(documents: URL, applicationSupport: URL, keeping directory: TemporaryDirectory, declaring stores: [String] = ["Notes.sqlite"]) throws {
        self.directory = directory
        origin = nil
        container = AppContainer(documents: documents, applicationSupport: applicationSupport,
                                 caches: directory.url.appending(path: "Caches"), temporary: directory.url.appending(path: "tmp"))
            .declaringStores(StoreDeclarations(stores))
        for root in ContainerRoot.standard {
            try FileManager.default.createDirectory(at: container[root], withIntermediateDirectories: true)
        }
    }

    public var root: URL { directory.url }

    /// A new container beside this one holding a copy of each of its files, byte for byte: a
    /// fixture built once (a killed writer's store is seconds of Python at soak sizes) and cloned
    /// for each run that starts from it. Only for a container of one folder (`init(base:declaring:)`).
    public func clone() throws -> TestContainer {
        guard let origin else { throw Failure("a container with explicit roots cannot be cloned") }
        let copy = try TestContainer(base: origin.base, declaring: origin.stores)
        for name in try FileManager.default.contentsOfDirectory(atPath: root.path) {
            let target = copy.root.appending(path: name)
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: root.appending(path: name), to: target)
        }
        return copy
    }
    public var documents: URL { container.documents }
    public var applicationSupport: URL { container.applicationSupport }

    /// The store `name` in Documents.
    public func documentsStore(_ name: String = "Notes.sqlite") -> StoreFileSet {
        StoreFileSet(main: documents.appending(path: name))
    }

    /// The store `name` in Application Support.
    public func supportStore(_ name: String = "Notes.sqlite") -> StoreFileSet {
        StoreFileSet(main: applicationSupport.appending(path: name))
    }

    /// Writes `text` at `path` relative to Documents, creating folders.
    @discardableResult
    public func writeDocument(_ path: String, _ data: Data) throws -> URL {
        let url = documents.appending(path: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
        return url
    }
}

/// Every regular file under a folder with its bytes, keyed by relative path.
public func snapshot(_ root: URL) -> [String: Data] {
    var result: [String: Data] = [:]
    guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey, .isSymbolicLinkKey]) else { return result }
    let prefix = root.standardizedFileURL.path + "/"
    for case let url as URL in enumerator {
        let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .isSymbolicLinkKey])
        guard values?.isRegularFile == true, values?.isSymbolicLink != true else { continue }
        let path = String(url.standardizedFileURL.path.dropFirst(prefix.count))
        result[path] = try? Data(contentsOf: url)
    }
    return result
}

/// The bytes of each file of a store that exists now, keyed by file name.
public func snapshot(_ store: StoreFileSet) -> [String: Data] {
    var result: [String: Data] = [:]
    for url in store.allPaths.dropLast() {
        if let data = try? Data(contentsOf: url) { result[url.lastPathComponent] = data }
    }
    for (path, data) in snapshot(store.supportFolder) { result[store.supportFolder.lastPathComponent + "/" + path] = data }
    return result
}

/// Every path (files and folders) under `root` whose name contains `fragment`.
public func paths(under root: URL, containing fragment: String) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: root.path) else { return [] }
    return enumerator.compactMap { $0 as? String }.filter { ($0 as NSString).lastPathComponent.contains(fragment) }.sorted()
}

/// True when the tests run as root (needed to mount a tmpfs).
public var runningAsRoot: Bool { getuid() == 0 }
