import Backstage
import Foundation

/// A declared store without a SQLite header, as an encrypted (SQLCipher) store looks to Backstage:
/// random bytes in the main file, its `-wal` and `-shm`, and a file in its support folder.
public enum OpaqueStore {
    /// Writes the store `name` into the container's Documents.
    /// - returns: Its files: the path under Documents and the bytes.
    public static func write(_ name: String = "Notes.sqlite", into app: TestContainer) throws -> [String: Data] {
        let base = (name as NSString).deletingPathExtension
        let files: [String: Data] = [
            name: randomBytes(65_536), name + "-wal": randomBytes(12_345), name + "-shm": randomBytes(32_768),
            ".\(base)_SUPPORT/_EXTERNAL_DATA/blob": randomBytes(5_000),
        ]
        for (path, data) in files { _ = try app.writeDocument(path, data) }
        return files
    }

    /// Random bytes whose first is never "S": not a SQLite header, nor the start of one.
    public static func randomBytes(_ count: Int) -> Data {
        var data = Data((0..<count).map { _ in UInt8.random(in: 0...255) })
        data[0] = 0x9c
        return data
    }

    /// What keeps `files` from having moved whole to Application Support: a file missing or
    /// different there, one left in Documents, a Backstage temporary, the journal. Empty when the
    /// store moved whole.
    public static func problems(afterMoving files: [String: Data], in app: TestContainer) -> [String] {
        var problems: [String] = []
        for (path, data) in files.sorted(by: { $0.key < $1.key }) {
            if FileManager.default.contents(atPath: app.applicationSupport.appending(path: path).path) != data {
                problems.append("\(path) is not in Application Support byte for byte")
            }
            if FileManager.default.fileExists(atPath: app.documents.appending(path: path).path) {
                problems.append("\(path) is left in Documents")
            }
        }
        problems += paths(under: app.root, containing: ".backstage-tmp").map { "a temporary is left: \($0)" }
        if FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path) {
            problems.append("the journal is left")
        }
        return problems
    }
}

/// A move killed at one phase boundary by `--crash-at`: with which strategy, at which phase.
public struct KilledMove: CustomStringConvertible, Sendable {
    public var strategy: RelocationStrategy
    public var phase: StepPhase

    public var description: String { "\(strategy.rawValue) killed at \(phase.rawValue)" }

    /// Every boundary of a rename, then of a copy.
    public static let everyBoundary: [KilledMove] = [RelocationStrategy.rename, .copy].flatMap { strategy in
        StepPhase.boundaries(for: strategy).map { KilledMove(strategy: strategy, phase: $0) }
    }
}
