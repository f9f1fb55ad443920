import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation

/// What the last completed upgrade left for the launch check: the storage version it reached and
/// the versions its build knew (the downgrade guard), and the quarantined folders it left without
/// strays, each with the identity and change time it had then.
///
/// It is the symbolic link `applicationSupport/.backstage/launch`, whose target is the record's
/// text: one `readlink` reads it, where a file takes an `open`, a `read` and a `close` (the same
/// trick Emacs uses for its lock files). The text is lines of words, `%`-escaped:
///
/// ```text
/// backstage-launch 2
/// reached v4
/// known v2 v3 v4
/// quiet documents 2049 1311 1763900000 123456789 Notes.sqlite
/// seen applicationSupport 2049 1307 1763900000 123000000 Notes.sqlite UserData.sqlite
/// ```
///
/// A `quiet` line vouches that the folder had no stray when its change time (`st_ctim`) was the
/// one written: adding, removing or renaming an entry changes it, and no one can set it back. The
/// launch check compares one `lstat` with it instead of listing the folder (7 µs on this machine,
/// most of the 10 µs budget); any difference, and the folder is listed as before. The names after
/// the numbers are stores the plan looks for in that folder that were not there then: while the
/// folder is unchanged, they are still not there, and the check does not look for them either.
/// A `seen` line says only that, for another folder the plan looks in: one `lstat` of the folder
/// instead of one per store.
///
/// Format 2 also promises that no journal is beside the record: a journal's first write removes
/// the record, durably, before anything else (``JournalFile/write(_:)``), and only a completed
/// run, whose steps cleared their journals, writes it again. Reading a format-2 record, the launch
/// check need not look for a crashed step: one `lstat` fewer. A format-1 record (an earlier build
/// wrote it) promises nothing of the kind, so the check looks for the journal as before.
package struct LaunchRecord: Equatable {
    /// A folder as a run left it: its identity and change time, the stores the plan looks for in
    /// it that were absent then, and whether it had no stray (a quarantined folder, `quiet`) or
    /// was only looked at (`seen`).
    package struct Stamp: Equatable {
        package var folder: String
        package var device: UInt64
        package var inode: UInt64
        package var seconds: Int64
        package var nanoseconds: Int64
        /// Names of stores the plan looks for directly in the folder that were absent then.
        package var absent: [String] = []
        /// True when the run also saw no stray in it (a `quiet` line).
        package var noStrays = true

        package init(
            folder: String, device: UInt64, inode: UInt64, seconds: Int64, nanoseconds: Int64, absent: [String] = [],
            noStrays: Bool = true
        ) {
            self.folder = folder
            self.device = device
            self.inode = inode
            self.seconds = seconds
            self.nanoseconds = nanoseconds
            self.absent = absent
            self.noStrays = noStrays
        }
    }

    /// What the launch check needs of a stamp it found: which one, and the folder as it was.
    package struct FoundStamp: Equatable {
        package var index: Int
        package var device: UInt64
        package var inode: UInt64
        package var seconds: Int64
        package var nanoseconds: Int64

        /// True when `status` is the folder, unchanged.
        package func matches(_ status: FileStatus?) -> Bool {
            guard let status, status.kind == .directory else { return false }
            return status.device == device && status.inode == inode
                && Int64(status.changeTime.tv_sec) == seconds && Int64(status.changeTime.tv_nsec) == nanoseconds
        }
    }

    /// The storage version the last versioned plan reached, nil when none ran.
    package var reached: String?
    /// The versions the build that reached it knew.
    package var known: [String] = []
    /// The folders the run stamped, in the record's order.
    package var stamps: [Stamp] = []
    /// True for a record that is there but cannot be read (damaged, or of a newer format): the
    /// launch check then answers "pending" and lets a run look at everything.
    package var isUnreadable = false
    /// True when the record promises that no journal is beside it (format 2).
    package var promisesNoJournal = true

    package static let format = "backstage-launch 2"
    /// The longest text a symbolic link holds on Linux and Apple platforms (`PATH_MAX` - 1), with room to spare.
    package static let maximumLength = 4000
    /// The format before the journal promise, still read.
    package static let formatWithoutPromise = "backstage-launch 1"

    static func path(in container: AppContainer) -> String {
        container.launchRecordPath
    }

    package static func read(_ container: AppContainer, fileSystem: FileSystem) -> LaunchRecord? {
        guard
            let record = fileSystem.withLink(
                path(in: container), { LaunchRecord(text: $0) ?? LaunchRecord(unreadable: ()) })
        else {
            // Not a link: absent (the usual case before any run), or something else in its place.
            return fileSystem.exists(path(in: container)) ? LaunchRecord(unreadable: ()) : nil
        }
        return record
    }

    /// True when a build knowing `versions` is older than the one that wrote this: that build
    /// knew every one of them, and reached a version not among them. (A build that knew fewer
    /// versions than the reader wrote it: the reader is the newer one.)
    package func isNewer(than versions: [String]) -> Bool {
        guard let reached else { return false }
        return !versions.contains(reached) && Set(versions).isSubset(of: known)
    }

    /// True when a build knowing `versions` does not know the storage this record's build left:
    /// it reached a version not among them, and the two builds share one (an older build, which
    /// ``isNewer(than:)`` tells, or a sibling whose history parted from this one's). A chain that
    /// shares none starts where the storage is: the last plans of a newer build.
    package func isUnknown(to versions: [String]) -> Bool {
        guard let reached, !versions.contains(reached) else { return false }
        return versions.contains(where: known.contains)
    }

    /// Records what a completed run of `plan` left: the version it reached (a plan without one
    /// keeps the version recorded before), and each folder it quarantines, once it is seen
    /// without strays and the clock the kernel stamps files with has moved past its change time
    /// (so that a later change cannot carry the same time: that clock is a tick coarse).
    static func update(after plan: UpgradePlan, in container: AppContainer, fileSystem: FileSystem) throws {
        let previous = read(container, fileSystem: fileSystem)
        // The promise holds only if no step left its journal (each clears it when it is done).
        guard JournalFile.mayPromiseNoJournal(in: container, fileSystem: fileSystem) else { return }
        var record = previous.flatMap { $0.isUnreadable ? nil : $0 } ?? LaunchRecord()
        record.promisesNoJournal = true
        if let reached = plan.versions.last {
            record.reached = reached
            record.known = plan.versions
        }
        let probed = plan.probedStores
        // By folder once, and each folder stamped once: a long plan costs its length, not its square.
        var probedNames: [ContainerLocation: [String]] = [:]
        for store in probed { probedNames[store.folder, default: []].append(store.name) }
        func names(in folder: ContainerLocation) -> [String] { probedNames[folder] ?? [] }
        var quarantined: Set<ContainerLocation> = []
        for step in plan.steps {
            guard case .folder(let folder)? = step.definition.launchLook, quarantined.insert(folder).inserted else {
                continue
            }
            let name = folder.description
            record.stamps.removeAll { $0.folder == name }
            if let quiet = stamp(
                folder, lookingFor: names(in: folder), noStrays: true, in: container,
                fileSystem: fileSystem)
            {
                record.stamps.append(quiet)
            }
        }
        // Every other folder the plan looks for stores in, when some were absent from it.
        var folders: [ContainerLocation] = []
        var listed: Set<ContainerLocation> = []
        for store in probed where !quarantined.contains(store.folder) && listed.insert(store.folder).inserted {
            folders.append(store.folder)
        }
        for folder in folders {
            let name = folder.description
            guard !record.stamps.contains(where: { $0.folder == name && $0.noStrays }) else { continue }
            record.stamps.removeAll { $0.folder == name }
            if let seen = stamp(
                folder, lookingFor: names(in: folder), noStrays: false, in: container, fileSystem: fileSystem),
                !seen.absent.isEmpty
            {
                record.stamps.append(seen)
            }
        }
        // A symbolic link's target holds at most 4,095 bytes: a long plan's stamps are dropped
        // from the last until it fits (each costs the launch check a few more stats, nothing else);
        // then the oldest known versions (the guard file keeps them all, see ``DowngradeGuard``).
        while record.text.utf8.count > maximumLength, !record.stamps.isEmpty { record.stamps.removeLast() }
        while record.text.utf8.count > maximumLength, record.known.count > 1 { record.known.removeFirst() }
        guard record.text.utf8.count <= maximumLength else { return }
        guard record != previous, record.reached != nil || !record.stamps.isEmpty else { return }
        let path = path(in: container)
        try fileSystem.createDirectories((path as NSString).deletingLastPathComponent)
        if previous?.isUnreadable == true, fileSystem.withLink(path, { _ in () }) == nil {
            try fileSystem.removeFile(path)
        }
        try fileSystem.writeLinkAtomically(record.text, to: path)
    }

    /// - parameter names: Stores the plan looks for directly in `folder`; those absent while the
    ///   folder keeps its change time are recorded as absent.
    /// - parameter noStrays: Stamp the folder only if it holds no stray (a quarantined folder).
    private static func stamp(
        _ folder: ContainerLocation, lookingFor names: [String], noStrays: Bool, in container: AppContainer,
        fileSystem: FileSystem
    ) -> Stamp? {
        let path = folder.filePath(in: container)
        guard let before = try? fileSystem.status(path), before.kind == .directory,
            // A time of whole seconds: a file system that keeps no finer one (a change within the
            // same second would carry the same time): no stamp, the check looks at the folder.
            before.changeTime.tv_nsec != 0
        else { return nil }
        // Until a change made now would get a later time (a few milliseconds at most after the
        // folder's last change, usually none; at most 30 ms, else no stamp).
        let changed = Int64(before.changeTime.tv_sec) * 1_000_000_000 + Int64(before.changeTime.tv_nsec)
        guard fileSystem.waitForStampClock(toPass: changed, atMost: 30_000_000) else { return nil }
        if noStrays {
            guard
                let entries = try? FileClassifier(fileSystem: fileSystem).scan(
                    URL(filePath: path, directoryHint: .isDirectory), recursive: false, measuringFolders: false),
                FileClassifier.strays(in: entries).isEmpty
            else { return nil }
        }
        guard let listed = try? fileSystem.contents(of: path),
            let after = try? fileSystem.status(path), after.device == before.device, after.inode == before.inode,
            after.changeTime.tv_sec == before.changeTime.tv_sec, after.changeTime.tv_nsec == before.changeTime.tv_nsec
        else { return nil }
        // Listed between two equal change times: the names are what the folder held at that time.
        let present = Set(listed)
        return Stamp(
            folder: folder.description, device: before.device, inode: before.inode,
            seconds: Int64(before.changeTime.tv_sec), nanoseconds: Int64(before.changeTime.tv_nsec),
            absent: names.filter { !present.contains($0) }, noStrays: noStrays)
    }

    // MARK: Text

    package var text: String {
        var lines = [Self.format]
        if let reached { lines.append("reached " + Self.escape(reached)) }
        if !known.isEmpty { lines.append((["known"] + known.map(Self.escape)).joined(separator: " ")) }
        for entry in stamps {
            lines.append(
                ([
                    (entry.noStrays ? "quiet " : "seen ")
                        + "\(Self.escape(entry.folder)) \(entry.device) \(entry.inode) \(entry.seconds) \(entry.nanoseconds)"
                ] + entry.absent.map(Self.escape)).joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    /// Reads the text of a record; nil for anything else (a newer format, damage): the launch
    /// check then looks at everything itself. ``LaunchRecordView`` is the one parser; this copies
    /// what it found into strings and arrays.
    package init?(text bytes: UnsafeRawBufferPointer) {
        guard let view = LaunchRecordView(bytes) else { return nil }
        self = view.record
    }

    private init(unreadable: Void) { isUnreadable = true }

    package init(reached: String? = nil, known: [String] = [], stamps: [Stamp] = []) {
        self.reached = reached
        self.known = known
        self.stamps = stamps
    }

    /// `%XX` for `%`, space, control characters and DEL; every other byte as it is.
    private static func escape(_ word: String) -> String {
        func needsEscape(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "%") || byte <= 0x20 || byte == 0x7F }
        guard word.utf8.contains(where: needsEscape) else { return word }
        var out: [UInt8] = []
        for byte in word.utf8 {
            if needsEscape(byte) { out += Array(String(format: "%%%02X", byte).utf8) } else { out.append(byte) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
