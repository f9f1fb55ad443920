import BackstageHarness
import Testing

/// A seed gives the same fixture as before: the generator's UUIDs are the ones its former
/// implementation (hex of `bytes(16)`, uppercased, dashed) made from the same draws.
@Suite struct SeededRandomTests {
    static func formerUUID(_ random: inout SeededRandom) -> String {
        let b = random.bytes(16)
        let hex = b.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined().uppercased()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-"
            + String(c[20..<32])
    }

    @Test func uuidsAreTheFormerOnesForASeed() {
        for seed: UInt64 in [0, 1, 2, 42, .max] {
            var random = SeededRandom(seed: seed), former = SeededRandom(seed: seed)
            for _ in 0..<1000 {
                #expect(random.uuid() == Self.formerUUID(&former))
                // The draws after it are the same too.
                #expect(random.next() == former.next())
            }
        }
    }
}
