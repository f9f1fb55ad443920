import Backstage
import CBackstageDiskRecorder
import Foundation

/// The disk recorder of Sources/CBackstageDiskRecorder, installed by this process's explicit call:
/// SQLite's operations through the recording VFS it makes the default one, Backstage's own through
/// the system-call layer's hook (`DiskRecording`), in one numbered log.
enum DiskRecorderInstall {
    /// Why the recorder could not be installed.
    struct Failure: Error, CustomStringConvertible {
        var log: String
        var code: Int32
        var description: String { "cannot record disk operations into \(log): \(String(cString: strerror(code)))" }
    }

    /// Backstage's side of the recorder: the C log's numbering and cut, and the planted bug.
    struct Recorder: DiskRecorder {
        var skippedSuffix: String?

        func begin(victim: String?) -> Int {
            Int(backstage_disk_begin(victim))
        }

        func done(_ index: Int, _ operation: DiskOperation, path: String, second: String) {
            backstage_disk_done(index, operation.rawValue, path, second)
        }

        func skipsFolderFsync(_ path: String) -> Bool {
            guard let skippedSuffix, !skippedSuffix.isEmpty else { return false }
            return path.hasSuffix(skippedSuffix)
        }
    }

    /// Starts recording; first thing, before any store is opened.
    static func install(
        log: String, cutBefore cut: Int?, stash: String?, skippingFolderFsyncsEndingWith suffix: String?
    ) throws(Failure) {
        let code = backstage_disk_install(log, cut ?? -1, stash)
        guard code == 0 else { throw Failure(log: log, code: code) }
        DiskRecording.install(Recorder(skippedSuffix: suffix))
    }
}
