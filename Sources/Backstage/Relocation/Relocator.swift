import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation
import Logging

/// What to relocate, and how.
public struct RelocationOptions: Sendable, Hashable {
    /// How the stores move; ``RelocationStrategy/auto`` renames on one file system and copies across.
    public var strategy: RelocationStrategy
    /// The stores to move, by file name (`Notes.sqlite`), base name (`Notes`), path relative to
    /// Documents or pattern (`Accounts/*/UserData.sqlite`); naming a database declares it (a file
    /// without a SQLite header, such as an encrypted store, is moved only when the container
    /// declares it). Empty: every store the container declares (``AppContainer/declaredStores``)
    /// found in Documents, and orphan files are quarantined. A database neither declared nor named
    /// is the user's and never moves.
    public var stores: [String]
    /// How long to wait for another process to release a store, in seconds.
    public var busyTimeout: Double
    /// Where the stores are: Documents, or another root (Application Support, to move stores
    /// already out of Documents into an App Group's shared container).
    public var source: ContainerRoot
    /// Where they go, same relative path: Application Support, or an App Group's shared
    /// container (``ContainerRoot/appGroup(_:)``) so that widgets and extensions can open them.
    public var destination: ContainerRoot

    /// Creates options.
    public init(
        strategy: RelocationStrategy = .auto, stores: [String] = [], busyTimeout: Double = 5,
        from source: ContainerRoot = .documents, to destination: ContainerRoot = .applicationSupport
    ) {
        self.strategy = strategy
        self.stores = stores
        self.busyTimeout = busyTimeout
        self.source = source
        self.destination = destination
    }
}

/// Moves an app's SQLite stores out of the user-visible Documents folder into Application
/// Support (or an App Group's shared container), same relative path, without losing a
/// committed row.
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
/// To let a widget open the store, move it into the App Group's shared container instead:
///
/// ```swift
/// let app = AppContainer.iOSSandbox(root: appRoot).addingAppGroup("group.com.example.notes", at: groupFolder)
/// try await Relocator(container: app).relocate(RelocationOptions(
///     stores: ["Notes.sqlite"], from: .applicationSupport, to: .appGroup("group.com.example.notes")))
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
    /// - throws: ``BackstageError`` for the first store that could not move. Stores moved
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
    public func events(_ options: RelocationOptions = RelocationOptions()) -> WorkStream<RelocationEvent> {
        let relocator = self
        return WorkStream { yield, isCancelled, caughtUp in
            let report = try relocator.run(
                options, onProgress: { yield(.progress($0)) }, isCancelled: isCancelled, caughtUp: caughtUp)
            yield(.finished(report))
        }
    }

    /// The synchronous engine: a plan of relocate steps on the runner (recover, quarantine, move).
    /// `caughtUp` is asked before each store's move: it waits until whoever receives the progress
    /// has taken it all (see ``WorkStream``), then says whether the run is cancelled.
    package func run(
        _ options: RelocationOptions, onProgress: @escaping (RelocationProgress) -> Void = { _ in },
        isCancelled: @escaping () -> Bool = { false }, caughtUp: (() -> Bool)? = nil
    ) throws(BackstageError) -> RelocationReport {
        let caughtUp = caughtUp ?? isCancelled
        var report = RelocationReport()
        for root in [options.source, options.destination] where !container.defines(root) {
            throw BackstageError(.undefinedAppGroup, path: root.rawValue, during: .relocating)
        }
        guard options.source != options.destination else {
            throw BackstageError(.sameSourceAndDestination, path: options.source.rawValue, during: .relocating)
        }
        var context = StepContext(
            container: container, fileSystem: fileSystem, logger: logger, busyTimeout: options.busyTimeout)
        context.phaseHook = phaseHook
        context.onProgress = onProgress
        context.isCancelled = isCancelled
        let runner: StepRunner
        do {
            runner = try StepRunner(context: context, kinds: StepKinds.journaled)
        } catch {
            // The lock lives in Application Support, the destination: say so.
            guard case .system(let failure) = error.cause, failure.isReadOnly else { throw error }
            throw BackstageError(.readOnlyDestination, path: failure.path, during: .relocating)
        }
        defer { runner.release() }
        do {
            if let recovered = try runner.recover() { report.recovered.append(recovered) }
            let sourceFolder = container[options.source]
            // Backstage's own folder (journal, quarantine, schema stamps) is never a source.
            let declarations = options.source == .documents ? container.declaredStores : .everyDatabase
            let entries = try FileClassifier(fileSystem: fileSystem, declarations: declarations)
                // Documents are never moved: only the others are kept, whatever the number of files.
                .scan(sourceFolder, measuringFolders: false, keeping: { $0.kind != .document && $0.kind != .hidden })
                .filter { $0.path != ".backstage" && !$0.path.hasPrefix(".backstage/") }
            let stores = try selectStores(
                entries, options.stores, in: sourceFolder, movedTo: container[options.destination],
                declaredBy: declarations, unmatched: &report.unmatched)
            report.leftUndeclared = entries.filter { $0.kind == .userDatabase && !stores.contains($0.path) }.map(\.path)
            if options.stores.isEmpty {
                if let link = entries.first(where: { $0.kind == .symlinkedStore && StoreFileSet.isMain($0.path) }) {
                    throw BackstageError(
                        .symlinkedStore, path: sourceFolder.appending(path: link.path).path, during: .relocating)
                }
                // Strays (orphan sidecars, temporaries) are only cleared out of the folder users see.
                if options.source == .documents {
                    report.add(try runner.run(QuarantineStep(context: context, root: sourceFolder, entries: entries)))
                }
            }
            for store in stores {
                // A Cancel pressed on any event so far: no further store starts moving.
                if caughtUp() {
                    throw BackstageError(
                        .cancelled, path: sourceFolder.appending(path: store).path, during: .relocating)
                }
                let step = RelocateStep(
                    context: context, source: ContainerLocation(options.source, store),
                    destination: ContainerLocation(options.destination, store), strategy: options.strategy)
                report.add(try runner.run(step))
            }
        } catch {
            throw BackstageError(error, path: container[options.source].path, during: .relocating)
        }
        return report
    }

    /// The databases to move, as paths relative to the source folder: the declared ones, or the
    /// named ones (a user's database too: naming it declares it). A store named but already at the
    /// destination (an earlier run moved it) is nothing to do, not an error; so is a name that
    /// matches nothing (a fresh install), which goes to `unmatched` with the closest database's name.
    private func selectStores(
        _ entries: [ClassifiedFile], _ names: [String], in folder: URL, movedTo destination: URL,
        declaredBy declarations: StoreDeclarations, unmatched: inout [RelocationReport.UnmatchedName]
    ) throws(BackstageError) -> [String] {
        guard !names.isEmpty else { return entries.filter { $0.kind == .database }.map(\.path) }
        let databases = entries.filter { $0.kind == .database || $0.kind == .userDatabase }.map(\.path)
        var selected: [String] = []
        for name in names {
            let pattern = StoreDeclarations([name])
            let matches = databases.filter { path in
                let file = (path as NSString).lastPathComponent
                return path == name || file == name || (file as NSString).deletingPathExtension == name
                    || pattern.declares(path)
            }
            if matches.isEmpty {
                // Named explicitly: say what is wrong with it rather than "not found".
                let url = folder.appending(path: name)
                if let status = try? fileSystem.status(url.path) {
                    if status.kind == .symlink {
                        throw BackstageError(.symlinkedStore, path: url.path, during: .relocating)
                    }
                    // A declared store SQLite has created and not yet written: the app's, moved as it is.
                    if status.kind == .regular && status.size == 0 && declarations.declares(name) {
                        if !selected.contains(name) { selected.append(name) }
                        continue
                    }
                    throw BackstageError(.notADatabase, path: url.path, during: .relocating)
                }
                let candidates = [name, name + ".sqlite"].map { destination.appending(path: $0).path }
                // Moved by an earlier run: whatever its header (a declared encrypted store has none).
                let moved = candidates.contains { candidate in
                    guard let status = try? fileSystem.status(candidate) else { return false }
                    return status.kind == .regular
                }
                if moved {
                    continue
                }
                unmatched.append(.init(name: name, closest: NearestName.suggestion(for: name, among: databases)))
                continue
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
