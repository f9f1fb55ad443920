import BackstageSystem
import Foundation
import GRDB

/// The bytes each table and index of a SQLite store holds, measured without reading it all: a
/// b-tree's interior pages give its exact count of leaf pages, and a sample of its leaves gives
/// how many overflow pages (long text, blobs) hang from each. Reading about one page in a hundred,
/// a 1 GB store is sized in milliseconds.
///
/// The schema comes from SQLite, opened `immutable=1` (no lock, no `-shm`, nothing written); the
/// pages from the main file. Pages only in the `-wal` are not seen: the figures are the store as of
/// its last checkpoint. See <https://www.sqlite.org/fileformat2.html#b_tree_pages>.
package struct BTreeSizes: Sendable {
    /// Bytes per table or index, by lowercased name; a table's own b-tree only (not its indexes).
    package var bytes: [String: Int64] = [:]
    /// Rows per table or index (entries), by lowercased name, from the sampled leaves' cell counts.
    package var rows: [String: Int64] = [:]
    /// Each index's table, lowercased.
    package var tableOfIndex: [String: String] = [:]

    /// The bytes of `table` (lowercased or not) and of its indexes; nil when the store has no such table.
    package func bytesWithIndexes(of table: String) -> Int64? {
        let name = table.lowercased()
        guard let own = bytes[name] else { return nil }
        return tableOfIndex.reduce(own) { sum, entry in entry.value == name ? sum + (bytes[entry.key] ?? 0) : sum }
    }

    /// Sizes the store at `path`.
    ///
    /// - parameter tables: When given (lowercased), only these tables and their indexes are sized,
    ///   unless one of them is not in the store: then every b-tree is, as without it.
    package static func read(_ path: String, fileSystem: FileSystem, tables: Set<String>? = nil) throws -> BTreeSizes {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "Backstage.BTreeSizes"
        let queue = try DatabaseQueue(path: StoreFileSet.immutableURI(path), configuration: configuration)
        var objects = try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT type, name, tbl_name, rootpage FROM sqlite_schema WHERE rootpage > 0")
        }
        try queue.close()
        if let tables, tables.isSubset(of: objects.map { ($0["tbl_name"] as String).lowercased() }) {
            objects = objects.filter { tables.contains(($0["tbl_name"] as String).lowercased()) }
        }
        var sizes = BTreeSizes()
        let file = try PageFile(path: path, fileSystem: fileSystem)
        defer { file.forgetLoaded() }
        file.willRead(objects.map { UInt32(truncatingIfNeeded: $0["rootpage"] as Int64) })
        for object in objects {
            let name = (object["name"] as String).lowercased()
            let root: Int64 = object["rootpage"]
            let tree = try file.tree(root: UInt32(truncatingIfNeeded: root))
            sizes.bytes[name] = tree.bytes
            sizes.rows[name] = tree.rows
            if (object["type"] as String) == "index" {
                sizes.tableOfIndex[name] = (object["tbl_name"] as String).lowercased()
            }
        }
        return sizes
    }
}

private struct NotADatabase: Error {}

/// The pages of a SQLite file, read one at a time, each level of a b-tree asked of the kernel
/// together before it is read (``willRead(_:)``).
///
/// The pages it brings into the page cache leave it once sized (``forgetLoaded()``): a scan of the
/// store that follows (the migration it estimates, a split's copy) otherwise meets one cached page
/// every megabyte or so, and the kernel's read-ahead, which reads into large folios only until it
/// meets a page already there, then reads the rest of the file 4 KiB at a time. A cold migration
/// of the bench's 10 GB store by the `sqlite3` shell took 2.59–2.77 s after `upgrade --dry-run`
/// had sized it, against 1.93–2.00 s without (system time 1.6–1.7 s against 1.0 s). The pages that
/// were cached before are left where they are. Not dropped either: the header and schema pages
/// SQLite reads to open the store (the first pages), and anything, before Linux 6.5 (no
/// `cachestat`), or where a SQLite page is smaller than the kernel's (advice on whole pages only).
private struct PageFile {
    let file: ReadableFile
    /// The pages this read brought into the page cache, and those it found there.
    private let cache = CacheFootprint()
    let pageSize: Int
    /// The usable part of a page: the page less the bytes reserved at its end.
    let usable: Int
    let pageCount: UInt32

    init(path: String, fileSystem: FileSystem) throws {
        file = try fileSystem.openForReading(path)
        // Only the pages asked for: the kernel's read-ahead around a page would bring in pages
        // this does not know it brought.
        file.readsAtRandom()
        let header = try fileSystem.readPrefix(path, count: 100)
        guard let parsed = SQLiteHeader(header) else { throw NotADatabase() }
        pageSize = parsed.pageSize
        usable = pageSize - Int(header[20])
        let size = (try fileSystem.status(path))?.size ?? 0
        pageCount = UInt32(clamping: size / Int64(pageSize))
    }

    /// Starts reading `numbers` into the page cache together: from a cold cache, pages read one
    /// after the other each wait for the disk; asked for level by level, a level waits about once.
    /// A cold `upgrade --dry-run` of the bench's 1 GB Notes store, 4 runs: 0.16–0.24 s before,
    /// 0.15–0.17 s after (the process's own cold start: 0.10 s).
    func willRead(_ numbers: [UInt32]) {
        guard numbers.count > 1 else { return }
        for number in numbers where number >= 1 && number <= pageCount && note(number) {
            file.willRead(at: offset(number), count: pageSize)
        }
    }

    private func offset(_ number: UInt32) -> Int64 { Int64(number - 1) * Int64(pageSize) }

    /// Notes whether page `number` is in the page cache before this reads it, the first time it
    /// is asked; true when it may need reading (not cached, or the kernel cannot say).
    private func note(_ number: UInt32) -> Bool {
        if let known = cache.wasCached[number] { return !known }
        let cached = file.isCached(at: offset(number), count: pageSize)
        cache.wasCached[number] = cached ?? true
        return cached != true
    }

    /// Drops the pages this read brought into the page cache.
    func forgetLoaded() {
        for (number, cached) in cache.wasCached where !cached { file.forget(at: offset(number), count: pageSize) }
        cache.wasCached = [:]
    }

    func page(_ number: UInt32) throws -> [UInt8] {
        guard number >= 1, number <= pageCount else { return [] }
        _ = note(number)
        var page = [UInt8](repeating: 0, count: pageSize)
        let read = try page.withUnsafeMutableBytes { buffer in
            try file.read(at: offset(number), into: buffer)
        }
        return read == pageSize ? page : []
    }

    /// The bytes of the b-tree rooted at `root` (interior pages, leaves and overflow pages) and
    /// its entries.
    func tree(root: UInt32) throws -> (bytes: Int64, rows: Int64) {
        var level = [root]
        var interior: Int64 = 0
        var visited: Set<UInt32> = []
        // Every leaf is at the same depth: walk the interior levels, count the children of the last.
        while true {
            let first = BTreePage(try page(level[0]), number: level[0])
            guard let first, !first.isLeaf else { break }
            // An interior level (its first page says so): the rest of it together. Never the
            // leaves, of which only a sample is read.
            willRead(Array(level.dropFirst()))
            var children: [UInt32] = []
            for number in level where visited.insert(number).inserted {
                guard let node = BTreePage(try page(number), number: number), !node.isLeaf else { continue }
                interior += 1
                children += node.children
            }
            // A damaged tree that loops or is empty ends the walk.
            guard !children.isEmpty, children.count < 50_000_000 else { break }
            level = children
        }
        let leaves = Int64(level.count)
        // Every leaf of a small tree; 32 spread over a big one.
        let count = level.count <= 64 ? level.count : 32
        let sample = (0..<count).map { level[$0 * level.count / count] }
        var sampledPages: Int64 = 0, sampledCells = 0
        willRead(sample)
        for number in sample {
            guard let leaf = BTreePage(try page(number), number: number) else { continue }
            sampledPages += 1 + leaf.overflowPages(usable: usable)
            sampledCells += leaf.cellCount
        }
        let perLeaf = sample.isEmpty ? 1 : Double(sampledPages) / Double(sample.count)
        let cellsPerLeaf = sample.isEmpty ? 0 : Double(sampledCells) / Double(sample.count)
        return (
            (interior + Int64((Double(leaves) * perLeaf).rounded())) * Int64(pageSize),
            Int64((Double(leaves) * cellsPerLeaf).rounded())
        )
    }
}

/// Whether each page a ``PageFile`` read was in the page cache before (true, also when the
/// kernel could not say: never dropped) or was brought there by this read (false).
private final class CacheFootprint {
    var wasCached: [UInt32: Bool] = [:]
}

/// One b-tree page: its kind, its cells, its children.
private struct BTreePage {
    let bytes: [UInt8]
    /// Where the page header starts: 100 on page 1, after the file header.
    let start: Int
    let kind: UInt8

    init?(_ bytes: [UInt8], number: UInt32) {
        guard !bytes.isEmpty else { return nil }
        self.bytes = bytes
        start = number == 1 ? 100 : 0
        kind = bytes[start]
        guard [0x02, 0x05, 0x0A, 0x0D].contains(kind) else { return nil }
    }

    var isLeaf: Bool { kind == 0x0A || kind == 0x0D }
    var isIndex: Bool { kind == 0x02 || kind == 0x0A }
    var cellCount: Int { Int(bytes[start + 3]) << 8 | Int(bytes[start + 4]) }

    func u32(_ at: Int) -> UInt32 {
        guard at + 4 <= bytes.count else { return 0 }
        return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8
            | UInt32(bytes[at + 3])
    }

    /// The offsets of the cells, from the cell pointer array after the header (8 bytes, 12 on interior pages).
    var cellOffsets: [Int] {
        let array = start + (isLeaf ? 8 : 12)
        return (0..<cellCount).compactMap { index in
            let at = array + 2 * index
            guard at + 1 < bytes.count else { return nil }
            let offset = Int(bytes[at]) << 8 | Int(bytes[at + 1])
            return offset < bytes.count ? offset : nil
        }
    }

    /// An interior page's children: each cell's left child, then the right-most pointer.
    var children: [UInt32] {
        cellOffsets.map { u32($0) } + [u32(start + 8)]
    }

    /// The overflow pages this leaf's cells chain to, from each cell's payload size.
    func overflowPages(usable: Int) -> Int64 {
        let most = isIndex ? (usable - 12) * 64 / 255 - 23 : usable - 35
        let least = (usable - 12) * 32 / 255 - 23
        var pages: Int64 = 0
        for offset in cellOffsets {
            let payload = Int(varint(at: offset))
            guard payload > most else { continue }
            let k = least + (payload - least) % (usable - 4)
            let local = k <= most ? k : least
            pages += Int64((payload - local + usable - 5) / (usable - 4))
        }
        return pages
    }

    func varint(at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<9 {
            guard offset + index < bytes.count else { return value }
            let byte = bytes[offset + index]
            if index == 8 { return value << 8 | UInt64(byte) }
            value = value << 7 | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 { return value }
        }
        return value
    }
}
