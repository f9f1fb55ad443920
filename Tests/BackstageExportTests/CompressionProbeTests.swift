import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// Blocks of a tar.gz that deflate would not shrink are stored: photos, videos and archives are
/// most of a user's bytes, and deflate spends as long on them as on text to make them larger.
@Suite struct CompressionProbeTests {
    static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    static func text(_ count: Int) -> [UInt8] {
        let words = ["the", "notes", "of", "a", "journey", "to", "Lisbon", "and", "Porto", "by", "train"]
        var out: [UInt8] = []
        var index = 0
        while out.count < count {
            out += Array(words[(index * 7 + index / 3) % words.count].utf8) + [32]
            index += 1
        }
        return Array(out.prefix(count))
    }

    static func probe(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer(CompressionProbe.isIncompressible)
    }

    @Test func randomBytesAreStored() {
        #expect(Self.probe(Self.random(128 << 10)))
        #expect(Self.probe(Self.random(5000)))
    }

    /// What deflate shrinks is deflated: text, a skewed alphabet, random bytes that repeat within
    /// deflate's window (flat as their byte counts are), a cycle through every byte value, half
    /// random and half text, and blocks too small to judge.
    @Test func whatDeflateShrinksIsDeflated() {
        let chunk = Self.random(4096)
        let cases: [(String, [UInt8])] = [
            ("text", Self.text(128 << 10)),
            ("base64-like", Self.random(128 << 10).map { $0 % 64 + 48 }),
            ("a random 4 KiB repeated", Array((0..<32).map { _ in chunk }.joined())),
            ("a random 16 KiB then its copy", { let half = Self.random(16 << 10); return half + half }()),
            ("every byte value in turn", (0..<(128 << 10)).map { UInt8(truncatingIfNeeded: $0) }),
            ("half random, half text", Self.random(64 << 10) + Self.text(64 << 10)),
            ("random, too small to judge", Self.random(4000)),
            ("zeros", [UInt8](repeating: 0, count: 128 << 10)),
        ]
        for (name, bytes) in cases {
            #expect(!Self.probe(bytes), "\(name) judged incompressible")
        }
    }

    /// A random file of 2 MB is stored: its bytes are in the tar.gz as they are, in stored deflate
    /// blocks, while the text beside it is compressed; both come back byte for byte, at any level.
    @Test(arguments: [1, 6, 9])
    func aTarGzStoresRandomBytesAndCompressesText(level: Int) async throws {
        let app = try TestContainer()
        let noise = Data(Self.random(2 << 20))
        let text = Data(Self.text(2 << 20))
        try app.writeDocument("Media/clip.mov", noise)
        try app.writeDocument("Notes/journal.txt", text)
        let archive = app.root.appending(path: "out.tar.gz")
        try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .tarGz, level: level, threads: 2))
        let written = try Data(contentsOf: archive)
        #expect(written.range(of: noise[(1 << 20)..<((1 << 20) + (32 << 10))]) != nil, "the random bytes are stored as they are")
        #expect(written.range(of: text[(1 << 20)..<((1 << 20) + 1024)]) == nil, "the text is compressed")
        #expect(written.count < noise.count + noise.count / 200 + text.count / 10, "\(written.count) bytes for \(noise.count) random and \(text.count) of text")
        #expect(try readBack(archive, format: .tarGz).files == ["Media/clip.mov": noise, "Notes/journal.txt": text])
    }
}
