import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The simulator's fixture clone (`FileSystem.cloneTree`): every folder, file and symbolic link of
/// the tree, the same bytes, the same modes and link targets; a special file refused naming it,
/// never copied as something else.
struct CloneTreeTests {
    @Test func aTreeIsClonedWithItsBytesModesAndLinks() throws {
        let scratch = try TemporaryDirectory()
        let tree = scratch.url.appending(path: "fixture").path
        let fm = FileManager.default
        try fm.createDirectory(atPath: tree + "/Documents/Photos/北京", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: tree + "/Library/Empty", withIntermediateDirectories: true)
        // Larger than one 8 MiB copy, so that the kernel's copy loops.
        let large = (0..<((9 << 20) + 3)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        try Data(large).write(to: URL(filePath: tree + "/Documents/Notes.sqlite"))
        try Data("天坛".utf8).write(to: URL(filePath: tree + "/Documents/Photos/北京/天坛.jpg"))
        try Data().write(to: URL(filePath: tree + "/Library/empty-file"))
        try fm.setAttributes([.posixPermissions: 0o640], ofItemAtPath: tree + "/Documents/Notes.sqlite")
        try fm.setAttributes([.posixPermissions: 0o750], ofItemAtPath: tree + "/Library/Empty")
        // A launch record's length of target: a link the clone recreates, never follows.
        let target = String(repeating: "v", count: 4095)
        try fm.createSymbolicLink(atPath: tree + "/Library/.launch", withDestinationPath: target)

        let clone = scratch.url.appending(path: "run").path
        try FileSystem().cloneTree(tree, to: clone)

        #expect(snapshot(URL(filePath: clone)) == snapshot(URL(filePath: tree)))
        #expect(try fm.contentsOfDirectory(atPath: clone + "/Library/Empty").isEmpty)
        // readlink(1): FileManager's destinationOfSymbolicLink cuts a long target at 1,026 bytes.
        let cloned = try runProcess("/usr/bin/readlink", [clone + "/Library/.launch"])
        #expect(cloned.status == 0 && cloned.stdout == target + "\n", "\(cloned.stdout.count) bytes")
        for path in ["/Documents/Notes.sqlite", "/Library/Empty", "/Documents/Photos/北京", "/Library/empty-file"] {
            let mode = { (root: String) in try fm.attributesOfItem(atPath: root + path)[.posixPermissions] as? Int }
            #expect(try mode(clone) == mode(tree), "\(path)")
        }
        #expect(try fm.attributesOfItem(atPath: clone + "/Documents/Notes.sqlite")[.size] as? Int == large.count)
    }

    @Test func aSpecialFileIsRefusedNamingIt() throws {
        let scratch = try TemporaryDirectory()
        let tree = scratch.url.appending(path: "fixture").path
        try FileManager.default.createDirectory(atPath: tree, withIntermediateDirectories: true)
        try shell("mkfifo '\(tree)/pipe'")
        #expect {
            try FileSystem().cloneTree(tree, to: scratch.url.appending(path: "run").path)
        } throws: { error in
            "\(error)".contains("\(tree)/pipe")
        }
    }
}
