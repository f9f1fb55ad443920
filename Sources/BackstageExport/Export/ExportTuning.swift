import Foundation

/// Limits that tests lower: zip64 fields from `zip64Limit` bytes; the bytes held for zip entries
/// waiting for their turn, per worker beyond the first, and how many entries may wait; the bytes of
/// the list of entries and of a zip's central directory kept in memory before they go to scratch
/// files. `counters`, when set, is told what the export held.
package struct ExportTuning: Sendable, Hashable {
    package var zip64Limit: UInt64 = 0xFFFF_FFFF
    package var heldBytesPerWorker = 8 << 20
    package var spilledBytesPerWorker: Int64 = 256 << 20
    package var entriesAheadPerWorker = 4096
    package var listedBytesInMemory = 1 << 20
    package var counters: ExportCounters?

    package init() {}
}

/// What an export held, for tests: whether its list of entries and its zip's central directory
/// went to their scratch files, and the most zip entries that waited for their turn at once.
package final class ExportCounters: @unchecked Sendable, Hashable {
    private let lock = NSLock()
    private var values = (itemsInFile: false, directoryInFile: false, mostEntriesInFlight: 0)

    package init() {}

    package var itemsInFile: Bool { lock.withLock { values.itemsInFile } }
    package var directoryInFile: Bool { lock.withLock { values.directoryInFile } }
    package var mostEntriesInFlight: Int { lock.withLock { values.mostEntriesInFlight } }

    func record(itemsInFile: Bool? = nil, directoryInFile: Bool? = nil, entriesInFlight: Int? = nil) {
        lock.withLock {
            if let itemsInFile { values.itemsInFile = itemsInFile }
            if let directoryInFile { values.directoryInFile = directoryInFile }
            if let entriesInFlight { values.mostEntriesInFlight = max(values.mostEntriesInFlight, entriesInFlight) }
        }
    }

    package static func == (a: ExportCounters, b: ExportCounters) -> Bool { a === b }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
