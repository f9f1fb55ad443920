import Foundation
import Logging

/// What to relocate, and how.
public struct RelocationOptions: Sendable, Hashable {
    /// How the stores move; ``RelocationStrategy/auto`` renames on one file system and copies across.
    public var strategy: RelocationStrategy
    /// The stores to move, by file name (`Notes.sqlite`), base name (`Notes`) or path relative
    /// to Documents. Empty: every store found in Documents, and orphan files are quarantined.
    public var stores: [String]
    /// How long to wait for another process to release a store, in seconds.
    public var busyTimeout: Double

    /// Creates options.
    public init(strategy: RelocationStrategy = .auto, stores: [String] = [], busyTimeout: Double = 5) {
        self.strategy = strategy
        self.stores = stores
        self.busyTimeout = busyTimeout
    }
}

/// Moves an app's SQLite stores out of the user-visible Documents folder into Application
/// Support, same relative path, without losing a committed row.
///
/// For example:
///
/// ```swift
/// let container = AppContainer.iOSSandbox(root: appRoot)
/// let report = try await Relocator(container: container).relocate()
/// for store in report.moved {
///     print("\(store.store) moved by \(store.strategy) in \(store.seconds) s")
/// }
/// ```
///
/// A relocation interrupted by a crash is finished or undone by the next call; running it
/// again when everything is in place does nothing. See <doc:RelocatingAStore>.
public struct Relocator: Sendable {
    /// The container whose Documents folder is cleaned up.
    public let container: AppContainer
    /// Where diagnostics go. Backstage never bootstraps logging.
    public var logger: Logger
    package var fileSystem = FileSystem()
    /// Called at every phase boundary of every move, before the work continues. Crash tests
    /// kill the process here.
    package var phaseHook: (@Sendable (String, StepPhase) -> Void)?

    /// Creates a relocator for `container`.
    public init(container: AppContainer, logger: Logger = Logger(label: "Backstage.Relocator")) {
        self.container = container
        self.logger = logger
    }

    /// Relocates the stores and returns what was done.
    ///
    /// - throws: ``RelocationError`` for the first store that could not move. Stores moved
    ///   before it stay moved; the failed store is left as it was.
    @discardableResult
    public func relocate(_ options: RelocationOptions = RelocationOptions()) async throws -> RelocationReport {
        for try await event in events(options) {
            if case .finished(let report) = event { return report }
        }
        throw CancellationError()
    }

    /// Relocates the stores, streaming progress then the report. Cancelling the task that
    /// iterates the stream cancels the work: a move not yet committed is undone.
    public func events(_ options: RelocationOptions = RelocationOptions()) -> AsyncThrowingStream<RelocationEvent, Error> {
        let relocator = self
        return AsyncThrowingStream.runningOffTheCooperativePool { yield, isCancelled in
            let report = try relocator.run(options, onProgress: { yield(.progress($0)) }, isCancelled: isCancelled)
            yield(.finished(report))
        }
    }

    /// The synchronous engine: recover, quarantine, move.
    package func run(_ options: RelocationOptions, onProgress: @escaping (RelocationProgress) -> Void = { _ in }, isCancelled: @escaping () -> Bool = { false }) throws(RelocationError) -> RelocationReport {
        var report = RelocationReport()
        let runLock: RunLock
        do {
            runLock = try RunLock(container: container, fileSystem: fileSystem)
        } catch .fileSystem(let error) where error.isReadOnly {
            // The lock lives in Application Support, the destination: say so.
            throw .readOnlyDestination(path: error.path)
        } catch {
            throw .engine(error)
        }
        defer { runLock.release() }
        var context = StepContext(container: container, fileSystem: fileSystem, logger: logger, busyTimeout: options.busyTimeout)
        context.phaseHook = phaseHook
        context.onProgress = onProgress
        context.isCancelled = isCancelled
        do {
            if let recovered = try context.recoverJournal() { report.recovered.append(recovered) }
            try context.quarantine.removeTemporaries()
            let entries = try FileClassifier(fileSystem: fileSystem).scan(container.documents, measuringFolders: false)
            let stores = try selectStores(entries, options.stores)
            if options.stores.isEmpty {
                if let link = entries.first(where: { $0.kind == .symlinkedStore && StoreFileSet.isMain($0.path) }) {
                    throw RelocationError.symlinkedStore(path: container.documents.appending(path: link.path).path)
                }
                try context.quarantineStrays(in: entries, root: container.documents, report: &report)
            }
            for store in stores {
                try context.relocateStore(ContainerLocation(.documents, store), to: ContainerLocation(.applicationSupport, store), strategy: options.strategy, report: &report)
            }
        } catch {
            throw RelocationError(error, path: container.documents.path)
        }
        return report
    }

    /// The databases to move, as paths relative to Documents.
    private func selectStores(_ entries: [ClassifiedFile], _ names: [String]) throws(RelocationError) -> [String] {
        let databases = entries.filter { $0.kind == .database }.map(\.path)
        guard !names.isEmpty else { return databases }
        var selected: [String] = []
        for name in names {
            let matches = databases.filter { path in
                let file = (path as NSString).lastPathComponent
                return path == name || file == name || (file as NSString).deletingPathExtension == name
            }
            if matches.isEmpty {
                // Named explicitly: say what is wrong with it rather than "not found".
                let url = container.documents.appending(path: name)
                if let status = try? fileSystem.status(url.path) {
                    if status.kind == .symlink { throw .symlinkedStore(path: url.path) }
                    throw .notADatabase(path: url.path)
                }
                throw .storeNotFound(name: name)
            }
            selected += matches.filter { !selected.contains($0) }
        }
        return selected
    }
}

extension StoreFileSet {
    /// True when `path` names a database file rather than a sidecar.
    static func isMain(_ path: String) -> Bool {
        FileClassifier.splitSidecar((path as NSString).lastPathComponent) == nil
    }
}

