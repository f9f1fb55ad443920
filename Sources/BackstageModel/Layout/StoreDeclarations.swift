import BackstageSystem
import Foundation

/// The databases an app says are its own in Documents.
///
/// A database in Documents is the app's store only when the app declares it: a path relative to
/// Documents (`Notes.sqlite`) or a pattern (`Accounts/*/UserData.sqlite`, where `*`, `?` and
/// `[...]` match within one path component). A declared store is the app's whatever its header
/// (an encrypted SQLCipher store has none), and so are its sidecars and Core Data support folder.
/// A database nobody declared is the **user's document**: audit lists it apart, relocation leaves
/// it unless it is named, export archives a consistent copy of it, and import restores it.
///
/// With no declaration at all, no database in Documents is the app's: nothing of the user's is
/// ever moved or left out on a guess. The declarations come from what the app already has:
///
/// ```swift
/// let container = AppContainer.iOSSandbox(root: appRoot)
///     .declaringStores(StoreDeclarations(["Notes.sqlite", "Accounts/*/UserData.sqlite"]))
/// let fromPlan = StoreDeclarations(plan: plan)
/// ```
public struct StoreDeclarations: Sendable, Hashable {
    /// The declared paths and patterns, relative to Documents.
    public private(set) var patterns: [String]
    /// True when every database by its header is a store (folders no user sees).
    let declaresEveryDatabase: Bool
    /// The last path component of each pattern: a file's name is matched against it before its
    /// whole path is built (the classifier asks about every file of a tree).
    private let names: [String]

    /// No store declared: every database in Documents is the user's.
    public static let none = StoreDeclarations([])

    /// Every database, by its header, is a store: for folders the user never sees (Application
    /// Support, Caches, an App Group), where nothing is a user's document.
    public static let everyDatabase = StoreDeclarations(patterns: [], declaresEveryDatabase: true)

    /// Declares the stores at `patterns`, paths relative to Documents (`Notes.sqlite`,
    /// `Accounts/*/UserData.sqlite`). A leading `documents/` or `/` is ignored.
    public init(_ patterns: [String]) {
        self.init(patterns: patterns.map(Self.normalized).filter { !$0.isEmpty }, declaresEveryDatabase: false)
    }

    private init(patterns: [String], declaresEveryDatabase: Bool) {
        self.patterns = patterns
        self.declaresEveryDatabase = declaresEveryDatabase
        names = patterns.map { String($0.split(separator: "/").last ?? "") }
    }

    /// These declarations and `other`'s.
    public func adding(_ other: StoreDeclarations) -> StoreDeclarations {
        StoreDeclarations(
            patterns: patterns + other.patterns.filter { !patterns.contains($0) },
            declaresEveryDatabase: declaresEveryDatabase || other.declaresEveryDatabase)
    }

    /// True when nothing is declared.
    public var isEmpty: Bool { patterns.isEmpty && !declaresEveryDatabase }

    /// True when the file at `path`, relative to Documents, is a declared store.
    public func declares(_ path: String) -> Bool {
        patterns.contains { pattern in
            pattern == path || fnmatch(pattern, path, FNM_PATHNAME | FNM_PERIOD) == 0
        }
    }

    /// True when the file `name` of the folder at `folder` (relative to Documents, empty for
    /// Documents itself) is a declared store.
    package func declares(name: String, inFolder folder: String) -> Bool {
        for (pattern, last) in zip(patterns, names) where last == name || fnmatch(last, name, FNM_PERIOD) == 0 {
            let path = folder.isEmpty ? name : folder + "/" + name
            if pattern == path || fnmatch(pattern, path, FNM_PATHNAME | FNM_PERIOD) == 0 { return true }
        }
        return false
    }

    private static func normalized(_ pattern: String) -> String {
        var text = pattern
        if text.hasPrefix("documents/") { text.removeFirst("documents/".count) }
        while text.hasPrefix("/") { text.removeFirst() }
        while text.hasPrefix("./") { text.removeFirst(2) }
        return text
    }
}

extension AppContainer {
    /// This container with `declarations` added to the stores it declares in Documents.
    public func declaringStores(_ declarations: StoreDeclarations) -> AppContainer {
        var container = self
        container.declaredStores = declaredStores.adding(declarations)
        return container
    }
}
