/// The one spelling of Backstage's temporary names: `.<name>.backstage-tmp[-<suffix>]`.
///
/// Every temporary Backstage creates (a copy being verified, a staged import, an archive being
/// written, a journal being replaced) carries the marker, so the classifier can tell it from a
/// user's file and a rerun can sweep what a crash left. Names are kept within `NAME_MAX`
/// (255 bytes): a long store name is shortened, with a hash of the whole name so that two long
/// names never share a temporary.
package enum TemporaryName {
    /// The marker every temporary name holds.
    package static let marker = ".backstage-tmp"
    /// The longest file name Linux file systems take, in bytes.
    package static let nameMax = 255

    /// True when `name` is one of Backstage's temporaries.
    package static func isTemporary(_ name: String) -> Bool {
        // Its bytes, not Foundation's `contains`, which bridged every name a walk classifies.
        var name = name
        return name.withUTF8 { isTemporary($0) }
    }

    /// ``isTemporary(_:)`` of a name's bytes, without building a string (the launch check's).
    package static func isTemporary(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        let marker = Self.marker.utf8
        guard name.count >= marker.count else { return false }
        for start in 0...(name.count - marker.count) where name[start] == UInt8(ascii: ".") {
            if name[start..<(start + marker.count)].elementsEqual(marker) { return true }
        }
        return false
    }

    /// The hidden temporary name beside `name`: `.<name>.backstage-tmp`, or with `-<suffix>`.
    package static func beside(_ name: String, suffix: String? = nil) -> String {
        let tail = marker + (suffix.map { "-" + $0 } ?? "")
        let room = nameMax - 1 - tail.utf8.count
        guard name.utf8.count > room else { return "." + name + tail }
        let hash = String(fnv1a(name), radix: 16)
        var kept = ""
        for character in name {
            guard kept.utf8.count + character.utf8.count <= room - hash.utf8.count - 1 else { break }
            kept.append(character)
        }
        return "." + kept + "~" + hash + tail
    }

    /// A name for a fresh temporary folder: `.backstage-tmp-<purpose>-<8 random hex digits>`.
    package static func unique(_ purpose: String) -> String {
        marker + "-" + purpose + "-" + String(UInt32.random(in: .min ... .max), radix: 16)
    }

    private static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return hash
    }
}
