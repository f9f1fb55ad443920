/// SplitMix64: a small deterministic generator, so a seed gives the same fixture on every machine.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` pseudo-random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBytes { raw in
            var i = 0
            while i + 8 <= count {
                raw.storeBytes(of: next(), toByteOffset: i, as: UInt64.self)
                i += 8
            }
            while i < count {
                raw[i] = UInt8(truncatingIfNeeded: next())
                i += 1
            }
        }
        return result
    }

    /// A UUID string made from the generator.
    public mutating func uuid() -> String {
        let b = bytes(16)
        let hex = b.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined().uppercased()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-"
            + String(c[20..<32])
    }
}
