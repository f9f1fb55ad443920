import Foundation

/// One operation a recorded `backstage` run made on the disk: a line of its disk log.
///
/// `backstage-simulate-child`, built beside `backstage` (release and debug builds alike), runs a
/// `backstage` command with every operation it makes on the disk recorded, through Backstage's one
/// system-call layer and a SQLite VFS; see ``PowerCut`` and ``PowerLossRun``.
public struct DiskEvent: Sendable, Hashable {
    public enum Operation: String, Sendable {
        case create, write, fsync, syncfs, rename, link, symlink, unlink, rmdir, mkdir
    }

    /// The operation's number in the run, from 0 (the run's cut counts the same way).
    public var index: Int
    public var operation: Operation
    public var path: String
    /// The new name of a rename, the existing file of a link; else empty.
    public var second: String

    /// The folders whose entries the operation changes: a name change is durable only once each is fsynced.
    var folders: [String] {
        switch operation {
        case .create, .mkdir, .symlink, .link, .unlink, .rmdir: [Self.parent(path)]
        case .rename: [Self.parent(path), Self.parent(second)]
        case .write, .fsync, .syncfs: []
        }
    }

    static func parent(_ path: String) -> String { (path as NSString).deletingLastPathComponent }

    /// Reads a disk log, skipping a torn last line (the run was killed while writing it).
    public static func log(at url: URL) throws -> [DiskEvent] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 3, let index = Int(fields[0]), let operation = Operation(rawValue: fields[1]) else {
                return nil
            }
            return DiskEvent(
                index: index, operation: operation, path: unescaped(fields[2]),
                second: fields.count > 3 ? unescaped(fields[3]) : "")
        }
        .sorted { $0.index < $1.index }
    }

    private static func unescaped(_ text: String) -> String { text.removingPercentEncoding ?? text }
}

/// The state a power cut could leave after the first operations of a recorded run: SIGKILL keeps
/// everything the kernel was given, a power cut keeps only what was made durable.
///
/// Applied to the folder a run killed before operation ``after`` left (the recorder's
/// `cutBefore`), it undoes, newest first, every name change (create, mkdir, link,
/// symlink, rename, unlink, rmdir) whose folders were not fsynced after it (a rename whose new
/// folder was fsynced but not its old one leaves both names), the strict model of
/// file systems that make each folder durable on its own (ext4 happens to make earlier renames
/// durable with any fsync; others do not), and with ``losesUnsyncedWrites`` takes back every
/// write not fsynced since: SQLite's (recorded by a VFS, with the bytes they replaced) get their
/// old bytes back, and files Backstage wrote (always new files) are emptied. Unlinked or replaced
/// files come back from the run's stash (the recorder's `stash`).
public struct PowerCut: Sendable, Hashable, LosslessStringConvertible {
    /// The number of operations that ran before the cut.
    public var after: Int
    /// Whether writes not yet fsynced are lost (else kept: the disk wrote them back in time).
    public var losesUnsyncedWrites: Bool

    /// The last operation before the cut, in words (`rename Notes.sqlite-tmp → Notes.sqlite`), when known.
    public var lastOperation: String?

    public init(after: Int, losesUnsyncedWrites: Bool, lastOperation: String? = nil) {
        self.after = after
        self.losesUnsyncedWrites = losesUnsyncedWrites
        self.lastOperation = lastOperation
    }

    /// The cuts after each of `cuts` operations of a recorded run, each naming the operation before it
    /// with paths relative to `root`: with unsynced writes kept, and lost where a write before the cut
    /// was not yet fsynced in the recorded log (where every one was, losing them changes nothing: the
    /// two are one state, tried once; the simulator adds the lost state of a cut whose own run, cut,
    /// logs a write the recorded run had fsynced).
    public static func cuts(after cuts: [Int], of events: [DiskEvent], root: URL) -> [PowerCut] {
        let prefix = root.standardizedFileURL.path + "/"
        func relative(_ path: String) -> String { path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path }
        return cuts.flatMap { after in
            // The last operation that ran: an operation that failed left its number unused, so the
            // one just before the cut may be missing from the log, and a cut before the first that
            // succeeded follows none. The latest number below the cut: the log is in the order
            // operations ended, and two threads' may end out of order.
            let ran = events.filter { $0.index < after }.max { $0.index < $1.index }
            let last =
                ran.map { event in
                    "\(event.operation.rawValue) \(relative(event.path))"
                        + (event.operation == .rename ? " → \(relative(event.second))" : "")
                } ?? "no change to the disk"
            let variants = hasUnsyncedWrite(before: after, in: events) ? [false, true] : [false]
            return variants.map { PowerCut(after: after, losesUnsyncedWrites: $0, lastOperation: last) }
        }
    }

    /// Whether a write among the first `after` operations of `events` is not fsynced by the cut: the
    /// writes ``apply(to:stash:)`` takes back, found in the log alone (it also skips any whose file
    /// is gone, so where this says none, it takes back none).
    static func hasUnsyncedWrite(before after: Int, in events: [DiskEvent]) -> Bool {
        !unsyncedWrites(in: events.filter { $0.index < after }).isEmpty
    }

    /// The writes of `ran` (the operations before a cut) not fsynced by its end, each with the name
    /// its file has there.
    private static func unsyncedWrites(in ran: [DiskEvent]) -> [(event: DiskEvent, file: String)] {
        ran.indices.compactMap { position in
            guard ran[position].operation == .write,
                let file = unsyncedFile(written: ran[position], then: ran[(position + 1)...])
            else { return nil }
            return (ran[position], file)
        }
    }

    /// `power cut @N` (after N operations), with the last operation before it and `, writes lost` when
    /// unsynced writes are lost: `power cut @53 (after fsync Library/Application Support), writes lost`.
    public var description: String {
        "power cut @\(after)\(lastOperation.map { " (after \($0))" } ?? "")\(losesUnsyncedWrites ? ", writes lost" : "")"
    }

    /// Reads a ``description``; nil for any other text.
    public init?(_ text: String) {
        guard text.hasPrefix("power cut @") else { return nil }
        var rest = text.dropFirst("power cut @".count)
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard let after = Int(digits) else { return nil }
        rest = rest.dropFirst(digits.count)
        let losesUnsyncedWrites = rest.hasSuffix(", writes lost")
        if losesUnsyncedWrites { rest = rest.dropLast(", writes lost".count) }
        var lastOperation: String?
        if !rest.isEmpty {
            guard rest.hasPrefix(" (after "), rest.hasSuffix(")") else { return nil }
            lastOperation = String(rest.dropFirst(" (after ".count).dropLast())
        }
        self.init(after: after, losesUnsyncedWrites: losesUnsyncedWrites, lastOperation: lastOperation)
    }

    /// What the cut undid.
    public struct Effect: Sendable, Hashable {
        /// Name changes undone.
        public var undone: [DiskEvent] = []
        /// Files emptied (written, never fsynced).
        public var emptied: [String] = []
        /// The writes not fsynced by the cut, taken back or not: where there are none, the cut's
        /// writes-lost state is its writes-kept one.
        public var unsyncedWrites = 0
    }

    /// Turns the folders a killed run left into what the disk holds after this power cut.
    @discardableResult
    public func apply(to events: [DiskEvent], stash: URL) throws -> Effect {
        let ran = events.filter { $0.index < after }
        let unsynced = Self.unsyncedWrites(in: ran)
        var effect = Effect(unsyncedWrites: unsynced.count)
        if losesUnsyncedWrites {
            // Newest first: each of SQLite's writes puts back the bytes it replaced; a file
            // Backstage wrote (always a new one) is emptied.
            for (event, path) in unsynced.reversed() where Self.isRegularFile(path) {
                if let undo = WriteUndo(event.second) {
                    try undo.apply(to: path, kept: stash.appending(path: "\(event.index).undo"))
                } else {
                    try FileHandle(forWritingTo: URL(filePath: path)).truncate(atOffset: 0)
                }
                effect.emptied.append(path)
            }
        }
        for (position, event) in ran.enumerated().reversed() where !event.folders.isEmpty {
            let later = ran[(position + 1)...]
            let synced = event.folders.map { folder in
                later.contains { $0.operation == .syncfs || ($0.operation == .fsync && $0.path == folder) }
            }
            if event.operation == .rename, synced == [false, true] {
                // The new name is durable, the old one's removal is not: both names hold the file.
                if Self.exists(event.second) && !Self.exists(event.path) && link(event.second, event.path) == 0 {
                    effect.undone.append(event)
                }
            } else if synced.contains(false) {
                try undo(event, stash: stash)
                effect.undone.append(event)
            }
        }
        return effect
    }

    /// The name the file written by `event` has at the cut, when that write was never fsynced.
    private static func unsyncedFile(written event: DiskEvent, then later: ArraySlice<DiskEvent>) -> String? {
        var name = event.path
        for next in later {
            switch next.operation {
            case .syncfs: return nil
            case .fsync where next.path == name: return nil
            case .rename where next.path == name: name = next.second
            // Another file renamed onto the name replaces the written one: its bytes are not there to lose.
            case .rename where next.second == name: return nil
            case .unlink where next.path == name: return nil
            default: continue
            }
        }
        return name
    }

    private func undo(_ event: DiskEvent, stash: URL) throws {
        let files = FileManager.default
        switch event.operation {
        case .create, .symlink, .link:
            if Self.exists(event.path) { try files.removeItem(atPath: event.path) }
        case .mkdir:
            if Self.exists(event.path) { try files.removeItem(atPath: event.path) }
        case .rmdir:
            if !Self.exists(event.path) && Self.exists(DiskEvent.parent(event.path)) {
                try files.createDirectory(atPath: event.path, withIntermediateDirectories: false)
            }
        case .unlink:
            try restore(stash.appending(path: String(event.index)).path, to: event.path)
        case .rename:
            guard Self.exists(event.second) else { return }
            if Self.exists(event.path) { try files.removeItem(atPath: event.path) }
            try files.createDirectory(atPath: DiskEvent.parent(event.path), withIntermediateDirectories: true)
            try files.moveItem(atPath: event.second, toPath: event.path)
            // What the rename replaced comes back.
            try restore(stash.appending(path: String(event.index)).path, to: event.second)
        case .write, .fsync, .syncfs:
            break
        }
    }

    private func restore(_ kept: String, to path: String) throws {
        guard Self.exists(kept), !Self.exists(path), Self.exists(DiskEvent.parent(path)) else { return }
        if link(kept, path) != 0 { try FileManager.default.copyItem(atPath: kept, toPath: path) }
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }
}

/// What one of SQLite's recorded writes (or truncations) replaced: the log's second field,
/// `offset amount sizeBefore`, and the stash's `<index>.undo` with the bytes it overwrote.
struct WriteUndo {
    var offset: UInt64
    var amount: UInt64
    var sizeBefore: UInt64

    init?(_ field: String) {
        let numbers = field.split(separator: " ").compactMap { UInt64($0) }
        guard numbers.count == 3 else { return nil }
        (offset, amount, sizeBefore) = (numbers[0], numbers[1], numbers[2])
    }

    /// Puts the file back as it was before the write.
    func apply(to path: String, kept: URL) throws {
        let handle = try FileHandle(forWritingTo: URL(filePath: path))
        defer { try? handle.close() }
        if let old = try? Data(contentsOf: kept), !old.isEmpty {
            try handle.seek(toOffset: offset)
            try handle.write(contentsOf: old)
        }
        if amount > 0, offset + amount > sizeBefore { try handle.truncate(atOffset: sizeBefore) }
    }
}

/// Runs a `backstage` command recorded, or cut short by a power cut: through
/// `backstage-simulate-child`, the executable beside `backstage` that installs the disk recorder
/// and then runs the command as `backstage` would (a ``SimulateChildRequest`` with its recorder).
public struct PowerLossRun: Sendable {
    /// The `backstage` executable; its child is the `backstage-simulate-child` beside it.
    public var executable: URL
    /// A folder of the runner's own for the log and the stash; emptied before each run.
    public var scratch: URL
    /// Folder fsyncs whose path ends with this are not made (nor recorded): the planted bug the
    /// explorer's own tests must find. Nil: every fsync is made.
    public var skipsFolderFsync: String?

    public init(executable: URL, scratch: URL, skipsFolderFsync: String? = nil) {
        self.executable = executable
        self.scratch = scratch
        self.skipsFolderFsync = skipsFolderFsync
    }

    /// The executable that runs a command recorded: `backstage-simulate-child` beside `executable`.
    public var child: URL { ChildProcess.simulateChild(beside: executable) }

    var log: URL { scratch.appending(path: "disk.log") }
    var stash: URL { scratch.appending(path: "stash") }

    /// Runs `command` to the end, recorded: the operations it made on the disk. `environment` is
    /// added to this process's for the command (the variables an xdg layout reads).
    public func record(
        _ command: SimulateChildRequest.Command, environment: [String: String] = [:]
    ) throws -> [DiskEvent] {
        try prepare()
        let outcome = try runChild(command, cut: nil, environment: environment)
        guard outcome.status == 0 || outcome.status == 1 else {
            throw PowerLossError.runFailed(status: outcome.status, message: outcome.stderr)
        }
        let events = try DiskEvent.log(at: log)
        guard !events.isEmpty else { throw PowerLossError.recordedNothing(executable: child.path) }
        return events
    }

    /// Runs `command` killed before operation `cut.after`, then turns what it left into the
    /// state of the power cut. Returns whether the run was cut (false: it ended before) and the cut's effect.
    public func run(
        _ command: SimulateChildRequest.Command, environment: [String: String] = [:], cut: PowerCut
    ) throws -> (cut: Bool, effect: PowerCut.Effect) {
        try prepare()
        let outcome = try runChild(command, cut: cut.after, environment: environment)
        let events = try DiskEvent.log(at: log)
        let effect = try cut.apply(to: events, stash: stash)
        return (outcome.killedBySIGKILL, effect)
    }

    /// Runs `command` killed with SIGKILL before operation `before`, and nothing more: the state
    /// kill -9 leaves, to compare with a power cut at the same point.
    public func kill(
        _ command: SimulateChildRequest.Command, environment: [String: String] = [:], before: Int
    ) throws -> Bool {
        try prepare()
        return try runChild(command, cut: before, environment: environment).killedBySIGKILL
    }

    private func prepare() throws {
        guard FileManager.default.isExecutableFile(atPath: child.path) else {
            throw PowerLossError.childNotFound(path: child.path)
        }
        try? FileManager.default.removeItem(at: scratch)
        try FileManager.default.createDirectory(at: stash, withIntermediateDirectories: true)
    }

    /// The child on `command`, recorded into ``log``, cut before operation `cut` when given.
    private func runChild(
        _ command: SimulateChildRequest.Command, cut: Int?, environment: [String: String]
    ) throws -> ChildProcess.Outcome {
        let recorder = SimulateChildRequest.Recorder(
            log: log.path, stash: stash.path, cutBefore: cut, skippingFolderFsyncsEndingWith: skipsFolderFsync)
        return try ChildProcess.run(
            SimulateChildRequest(command, recorder: recorder), beside: executable,
            environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 })
    }

    /// The cuts worth trying in a run of `events`: with `limit`, right after each name change (its
    /// folder not yet fsynced) and evenly between, at most `limit`; without, after every operation.
    public static func cuts(of events: [DiskEvent], limit: Int?) -> [Int] {
        let end = (events.last?.index ?? 0) + 2
        let all = Array(1..<end)
        guard let limit, all.count > limit else { return all }
        let afterNameChanges = events.filter { !$0.folders.isEmpty }.map { $0.index + 1 }
        var chosen: Set = [end - 1]
        chosen.formUnion(afterNameChanges.prefix(limit / 2))
        let stride = max(1, all.count / max(1, limit - chosen.count))
        for cut in Swift.stride(from: 1, to: end, by: stride) where chosen.count < limit { chosen.insert(cut) }
        return chosen.sorted()
    }
}

/// Why a power-loss run could not be made.
public enum PowerLossError: Error, CustomStringConvertible, Sendable {
    /// `backstage-simulate-child` is not beside `backstage` (a build or install without it).
    case childNotFound(path: String)
    /// The child recorded no disk operation.
    case recordedNothing(executable: String)
    /// The recorded run failed before any cut.
    case runFailed(status: Int32, message: String)

    public var description: String {
        switch self {
        case .childNotFound(let path):
            "\(path) is missing: power-loss runs need the backstage-simulate-child built (or installed) beside backstage"
        case .recordedNothing(let executable):
            "\(executable) recorded no disk operation: the command made none, or the recorder could not be installed"
        case .runFailed(let status, let message):
            "the recorded run failed with exit status \(status): \(message)"
        }
    }
}

/// Which power cuts a simulation tries.
public enum PowerCutScope: Sendable, Hashable {
    /// After every operation of the run, each with unsynced writes kept and, where a write is not
    /// yet fsynced, lost.
    case all
    /// At most this many cuts (right after name changes first, then evenly spread), each with
    /// unsynced writes kept and, where there are some, lost.
    case bounded(Int)
}
