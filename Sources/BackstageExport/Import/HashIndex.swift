/// A set of 64-bit hashes in about 8 bytes each, that grows a piece at a time: 1,024 sets of 32-bit
/// fingerprints, the low 10 bits of a hash choosing the set and the next 32 bits kept in it. A hash
/// added is always found again; one never added is found by chance about once in 2⁴² tries (a
/// tenth of a time over a whole million-entry import), which ``EntryPaths`` checks on disk anyway.
///
/// One `Set<Int>` of a million hashes takes 16 MB, and 24 MB while it doubles (the old table and
/// the new one); here each piece doubles alone, and a million take some 8 MB.
struct HashIndex {
    private static let pieceBits = 10
    private var pieces = [Set<UInt32>](repeating: [], count: 1 << HashIndex.pieceBits)

    func contains(_ hash: Int) -> Bool {
        let (piece, fingerprint) = Self.split(hash)
        return pieces[piece].contains(fingerprint)
    }

    mutating func insert(_ hash: Int) {
        let (piece, fingerprint) = Self.split(hash)
        pieces[piece].insert(fingerprint)
    }

    private static func split(_ hash: Int) -> (piece: Int, fingerprint: UInt32) {
        let bits = UInt64(bitPattern: Int64(hash))
        return (Int(bits & (1 << pieceBits - 1)), UInt32(truncatingIfNeeded: bits >> UInt64(pieceBits)))
    }
}
