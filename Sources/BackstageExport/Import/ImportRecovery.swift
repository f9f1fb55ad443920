/// What became of an import that was killed (or failed) while it moved its files into Documents:
/// the next import, or ``Importer/recoverInterruptedImport()``, finished it or undid it.
///
/// The import's journal decides. Once every staged file is durable and the journal written, the
/// move-in is completed: the files not yet moved in are, and the originals they replace (set aside
/// under their own names) go, as the import would have done. When completing it would overwrite
/// something written in Documents since (a file now where a new one goes, a replaced file changed),
/// or when the import had started undoing a failure, it is undone instead: what it moved in is moved
/// back out and every original is put back under its own name. A file that can go neither way is
/// quarantined, never deleted.
///
/// For example:
///
/// ```swift
/// if let recovery = try Importer(container: container).recoverInterruptedImport() {
///     print(recovery.outcome, recovery.putBack)
/// }
/// ```
public struct ImportRecovery: Sendable, Hashable, Codable {
    /// Which way the interrupted import went.
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// Every file of the archive is in Documents, as if the import had not been interrupted.
        case completed
        /// Documents is as it was before the import: every original back under its own name.
        case undone
        /// The staging folder was gone (a system emptied the temporary folder after the kill), and
        /// with it the files not yet moved in and the originals set aside: Documents is left as it
        /// was found, ``ImportRecovery/movedIn`` naming what had been moved in.
        case abandoned
    }

    /// The archive the interrupted import was reading; nil when it was killed before its journal
    /// was written (before anything moved into Documents).
    public var archive: String?
    public var outcome: Outcome
    /// Paths (relative to Documents) of the interrupted import's files, all in Documents now
    /// (completed), or those it had moved in (abandoned).
    public var movedIn: [String] = []
    /// Paths whose original was replaced by the archive's file (completed): the original is gone, as
    /// `replace` asked.
    public var replaced: [String] = []
    /// Paths the interrupted import had moved in, moved back out (undone).
    public var removed: [String] = []
    /// Paths whose original, set aside under its own name, was put back (undone).
    public var putBack: [String] = []
    /// Files that could go neither back nor forward (an original whose place was taken since, a
    /// set-aside file of an older Backstage), moved into quarantine: where each is now.
    public var quarantined: [String] = []

    public init(archive: String?, outcome: Outcome) {
        self.archive = archive
        self.outcome = outcome
    }
}
