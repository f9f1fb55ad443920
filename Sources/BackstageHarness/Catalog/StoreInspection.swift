import Backstage
import Foundation
import GRDB

/// What a store pulled off a device is, read without touching it (a private copy is opened; the
/// file set itself is only read byte by byte): journal mode, page size, sizes, the frames its
/// `-wal` holds that were not checkpointed yet, Core Data's entities with their row counts, the
/// model's version hashes and identifiers, external data, and which catalog version it matches.
///
/// For example:
///
/// ```swift
/// let inspection = try StoreInspection(of: StoreFileSet(main: URL(filePath: "Pulled/Notes.sqlite")))
/// inspection.framesNotCheckpointed   // committed pages only in the -wal
/// ```
public struct StoreInspection: Sendable, Hashable, Codable {
    /// A Core Data entity and how many rows it has.
    public struct Entity: Sendable, Hashable, Codable {
        public var name: String
        public var id: Int
        public var table: String
        public var rows: Int
    }

    public var path: String
    /// `wal` or `delete`, from the header.
    public var journalMode: String
    public var pageSize: Int
    public var mainBytes: Int64
    /// The `-wal`'s size, when there is one.
    public var walBytes: Int64?
    /// Frames in the `-wal` that were committed but not yet copied into the main file (from the
    /// `-shm` index when it is there, else the valid frames of the `-wal` itself).
    public var framesNotCheckpointed: Int
    /// A hot `-journal` is beside the store: the next open rolls a killed transaction back.
    public var hotJournal: Bool
    /// Rows per table.
    public var tables: [String: Int]
    /// Core Data's entities with their rows, when it is a Core Data store.
    public var entities: [Entity]?
    public var versionHashes: [String: String]?
    public var versionIdentifiers: [String]?
    public var externalFiles: Int?
    public var externalBytes: Int64?
    /// `version location` of the catalog store whose schema this store has, when a catalog was given and
    /// exactly one version's store has it; `nil` when none or several do (``catalogMatches`` lists them).
    public var catalogMatch: String?
    /// Every `version location` of the catalog whose schema this store has, oldest version first. Two
    /// versions that share a schema (one only moved the store) both match: a store's schema alone cannot
    /// tell them apart, and neither is picked.
    public var catalogMatches: [String] = []
    /// With a catalog of Core Data versions: the version whose model wrote the store, by its
    /// `Z_METADATA` where that tells, else by its schema; several when neither tells them apart.
    public var modelVersion: ModelVersionMatch?

    /// Inspects `store`; with `catalog`, finds the version and store whose schema it has.
    public init(of store: StoreFileSet, catalog: CatalogFolder? = nil) throws {
        let fileSystem = FileSystem()
        let schema = try StoreCapture.capture(store)
        path = store.main.path
        journalMode = schema.journalMode
        pageSize = schema.pageSize
        mainBytes = try fileSystem.status(store.main.path)?.size ?? 0
        walBytes = try fileSystem.status(store.sidecar(.wal).path)?.size
        framesNotCheckpointed = try Self.pendingFrames(store, pageSize: schema.pageSize, fileSystem: fileSystem)
        let journal = try fileSystem.status(store.sidecar(.journal).path)
        hotJournal =
            journal.map { $0.size > 0 } ?? false
            ? SidecarMagic.isJournal(try fileSystem.readPrefix(store.sidecar(.journal).path, count: 8)) : false
        tables = schema.tables.mapValues(\.rows)
        if let facts = schema.coreData {
            entities = try StoreInspector.withCopy(of: store) { db in
                try facts.entities.map { entity in
                    let hasEntityColumn =
                        try db.tableExists(entity.table) && db.columns(in: entity.table).contains { $0.name == "Z_ENT" }
                    let rows =
                        hasEntityColumn
                        ? try Int.fetchOne(
                            db, sql: "SELECT COUNT(*) FROM \(entity.table.quotedSQLIdentifier) WHERE Z_ENT = ?",
                            arguments: [entity.id]) ?? 0 : 0
                    return Entity(name: entity.name, id: entity.id, table: entity.table, rows: rows)
                }
            }
            versionHashes = facts.versionHashes
            versionIdentifiers = facts.versionIdentifiers
            externalFiles = facts.externalFiles
            externalBytes = facts.externalBytes
        }
        if let catalog {
            let objects = Set(schema.objects.map(\.sql))
            for version in catalog.manifest.versions {
                for candidate in version.stores
                where Set(try catalog.schema(of: candidate).objects.map(\.sql)) == objects {
                    catalogMatches.append("\(version.name) \(candidate.location)")
                }
            }
            catalogMatch = catalogMatches.count == 1 ? catalogMatches[0] : nil
            modelVersion = try Self.modelVersion(of: schema, catalog: catalog)
        }
    }

    /// Committed frames not yet in the main file, as SQLite's recovery counts them: the frames of
    /// the `-wal` whose salts match its header and whose checksums continue the chain, up to the
    /// last commit frame among them (a torn frame ends the log there), less the frames the
    /// `-shm` says were copied back already (when it belongs to this `-wal`).
    static func pendingFrames(_ store: StoreFileSet, pageSize: Int, fileSystem: FileSystem) throws -> Int {
        guard let wal = try fileSystem.status(store.sidecar(.wal).path), wal.size > 32 else { return 0 }
        let header = try fileSystem.readPrefix(store.sidecar(.wal).path, count: 32)
        guard header.count == 32, SidecarMagic.isWAL(header) else { return 0 }
        let salts = Array(header[16..<24])
        let bigEndianWords = header[3] & 1 == 1
        var checksum = WALChecksum(bigEndian: bigEndianWords)
        checksum.add(header[0..<24])
        guard checksum.matches(header[24..<32]) else { return 0 }
        // Frame by frame through one buffer: a WAL can be gigabytes.
        let file = try fileSystem.openForReading(store.sidecar(.wal).path)
        defer { file.close() }
        let frameSize = pageSize + 24
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: frameSize, alignment: 16)
        defer { buffer.deallocate() }
        /// Reads `count` bytes into the buffer (fewer only at the end of the file).
        func fill(_ count: Int) throws -> Int {
            var filled = 0
            while filled < count {
                let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<count]))
                if n == 0 { break }
                filled += n
            }
            return filled
        }
        guard try fill(32) == 32 else { return 0 }
        var frames = 0, lastCommit = 0
        while try fill(frameSize) == frameSize, Array(buffer[8..<16]) == salts {
            let bytes = UnsafeRawBufferPointer(buffer)
            checksum.add(bytes[0..<8])
            checksum.add(bytes[24..<frameSize])
            guard checksum.matches(bytes[16..<24]) else { break }
            frames += 1
            if bytes[4] | bytes[5] | bytes[6] | bytes[7] != 0 { lastCommit = frames }
        }
        return max(0, lastCommit - backfilled(store, salts: salts, fileSystem: fileSystem))
    }

    /// `nBackfill` of the `-shm`, when it is a valid WAL-index of this `-wal` (same salts); else 0.
    private static func backfilled(_ store: StoreFileSet, salts: [UInt8], fileSystem: FileSystem) -> Int {
        let shm = (try? fileSystem.readPrefix(store.sidecar(.shm).path, count: 136)) ?? []
        guard shm.count >= 136, SidecarMagic.isWALIndex(shm) else { return 0 }
        let little = shm[0] == 0x18
        func u32(_ offset: Int) -> Int {
            let b = shm[offset..<(offset + 4)].map(UInt32.init)
            return Int(little ? b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24 : b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3])
        }
        // WalIndexHdr.aSalt (offset 32) is kept in the WAL's own byte order.
        guard Array(shm[32..<40]) == salts else { return 0 }
        return u32(96)  // WalCkptInfo.nBackfill
    }
}

/// SQLite's WAL checksum: two 32-bit sums over 8-byte steps, carried from the header through
/// every frame, in the byte order the WAL's magic number says.
struct WALChecksum {
    let bigEndian: Bool
    var s0: UInt32 = 0
    var s1: UInt32 = 0

    init(bigEndian: Bool) { self.bigEndian = bigEndian }

    mutating func add<C: Collection>(_ bytes: C) where C.Element == UInt8, C.Index == Int {
        var index = bytes.startIndex
        while index + 8 <= bytes.endIndex {
            s0 = s0 &+ word(bytes, index) &+ s1
            s1 = s1 &+ word(bytes, index + 4) &+ s0
            index += 8
        }
    }

    private func word<C: Collection>(_ bytes: C, _ at: Int) -> UInt32 where C.Element == UInt8, C.Index == Int {
        let b = (UInt32(bytes[at]), UInt32(bytes[at + 1]), UInt32(bytes[at + 2]), UInt32(bytes[at + 3]))
        return bigEndian ? b.0 << 24 | b.1 << 16 | b.2 << 8 | b.3 : b.3 << 24 | b.2 << 16 | b.1 << 8 | b.0
    }

    /// The stored pair (big-endian) equals the running sums.
    func matches<C: Collection>(_ stored: C) -> Bool where C.Element == UInt8, C.Index == Int {
        let a = Array(stored)
        guard a.count == 8 else { return false }
        let x = UInt32(a[0]) << 24 | UInt32(a[1]) << 16 | UInt32(a[2]) << 8 | UInt32(a[3])
        let y = UInt32(a[4]) << 24 | UInt32(a[5]) << 16 | UInt32(a[6]) << 8 | UInt32(a[7])
        return x == s0 && y == s1
    }
}
