import Backstage
import Foundation

/// A zip written by several workers at once: the entries of a zip are independent, so each
/// worker takes the next entry in order and compresses it (``ZipEntryEncoder``: deflated, or
/// stored when deflate would not shrink it). The entry that comes next in the archive goes
/// straight to the file as it is made; the others are held until their turn: in memory up to a
/// budget (8 MiB per worker beyond the first), then in a nameless scratch file beside the archive
/// (up to 256 MiB per worker beyond the first), past which their worker waits. A stored entry is
/// never held: copying it in its turn costs no more than holding it would (a zip of 50 MB of
/// random photos took 56 ms of CPU and 5,744 page faults holding them, 48 ms and 1,469 without),
/// so its worker reads the file straight into the archive: at its place as soon as the entries
/// before it have known ends (a stored entry's end is known before it is read, so photos in a
/// row are copied side by side by all the workers), else in its turn. Backstage
/// puts the entries in order, and the central directory records with the offsets the entries
/// have in the archive (``ZipDirectory``).
///
/// Nothing is kept for every entry: workers read the entries from the spooled list
/// (``ArchiveItems``) as they take them, at most ``entriesAheadPerWorker`` ahead of the one whose
/// turn it is; an entry's state goes once it is written out, and its central directory record
/// to a ``Spool`` (memory, then a scratch file), copied to the archive at its end. A million
/// documents' records were some 100 MB of memory, with 25 bytes more an entry for its offset and
/// its place.
///
/// Entries are written in the order given and each entry's bytes do not depend on which worker
/// wrote it, so the archive is the same whatever the number of workers. A single large file is
/// compressed by one worker: memory stays bounded, and the others go on with the next entries,
/// their output spilled to the scratch file once the memory budget is spent. (With memory
/// alone, a second worker compressing a 20 MB file stopped at its budget until the first
/// finished the file before it: two workers took 0.76× one worker's time on large files, 0.52×
/// on small ones.)
struct ParallelZip {
    var items: ArchiveItems
    var level: Int?
    var workers: Int
    /// Reading the files ahead of the workers, told which entry they take.
    var readAhead: ReadAhead
    /// Bytes held for entries waiting for their turn, per worker beyond the first.
    var heldBytesPerWorker = 8 << 20
    /// Bytes spilled to the scratch file for entries waiting for their turn, per worker beyond the first.
    var spilledBytesPerWorker: Int64 = 256 << 20
    /// Where the scratch file is created (and at once unlinked): beside the archive's temporary.
    var spillPath: String
    /// Entries a worker may take ahead of the one whose turn it is, per worker beyond the first:
    /// each waiting entry is a few hundred bytes of state and central directory record, whatever
    /// its size, so their number is bounded too (a large file's turn can come long after the
    /// small files behind it are compressed).
    var entriesAheadPerWorker = 4096
    /// The central directory's records, in entry order, as the entries are written: in memory up
    /// to a limit, then in a scratch file, copied to the archive at its end.
    var directorySpool: Spool
    var directory = ZipDirectory()
    /// Told whether the central directory went to its scratch file, and the most entries in flight.
    var counters: ExportCounters?

    /// Writes the archive to `output`. `progress` and `isCancelled` are called on the calling
    /// thread only, a few times a second, while the workers run.
    ///
    /// - returns: the bytes of file content archived.
    func write(
        to output: ArchiveOutput, fileSystem: FileSystem, progress: (_ entries: Int, _ bytes: Int64) -> Void,
        isCancelled: () -> Bool
    ) throws -> Int64 {
        let count = max(1, min(workers, items.count))
        let schedule = Schedule(
            items: items, output: output, workers: count, readAhead: readAhead,
            budget: heldBytesPerWorker * (count - 1), entriesAhead: max(1, entriesAheadPerWorker * (count - 1)),
            spill: Spill(path: spillPath, budget: spilledBytesPerWorker * Int64(count - 1), fileSystem: fileSystem),
            directory: directory, directorySpool: directorySpool)
        let threads = ThreadGroup()
        let level = level
        for worker in 0..<count {
            threads.start { schedule.work(worker, level: level, fileSystem: fileSystem) }
        }
        while !schedule.waitUntilFinished(seconds: 0.1) {
            let now = schedule.progress
            progress(now.entries, now.bytes)
            if isCancelled() { schedule.fail(CancellationError()) }
        }
        threads.wait()
        if let failure = schedule.failure { throw failure }
        counters?.record(directoryInFile: directorySpool.isInFile, entriesInFlight: schedule.mostInFlight)

        // The central directory, its records in entry order with their offsets, from the spool.
        let directoryOffset = UInt64(output.position)
        do {
            try directorySpool.finish()
            try SpoolReader(directorySpool, bufferSize: 1 << 20).forEachChunk { try output.write($0) }
        } catch let error as FileSystemError {
            throw ArchiveError(error, archivePath: output.archivePath)
        }
        try output.write(
            directory.end(
                count: items.count, directoryOffset: directoryOffset,
                directorySize: UInt64(output.position) - directoryOffset))
        return schedule.progress.bytes
    }

    /// Which entry goes to the file next, the bytes held for the others, and the workers' state.
    ///
    /// One thread at a time writes to the file: the worker of the entry whose turn it is
    /// (``head``), or the worker that finished it and writes the complete entries after it.
    /// The turn moves on only after the writing is done, under the lock.
    final class Schedule: @unchecked Sendable {
        let output: ArchiveOutput
        let budget: Int
        /// The most entries taken and not yet written out (``ParallelZip/entriesAheadPerWorker``).
        let entriesAhead: Int
        private let reader: ArchiveItems.Reader
        private let count: Int
        private let spill: Spill
        private let readAhead: ReadAhead
        private let directory: ZipDirectory
        private let directorySpool: Spool
        private let condition = NSCondition()
        private var nextToTake = 0
        /// The bytes of the entries before `nextToTake`.
        private var bytesTaken: Int64 = 0
        private var head = 0
        /// The entries taken and not yet written out: from `head` to `nextToTake`.
        private var waiting: [Int: Waiting] = [:]
        /// The bytes held in memory.
        private var heldBytes = 0
        /// Workers not yet stopped.
        private var running: Int
        private(set) var failure: Error?
        private var entriesDone = 0
        private var bytesDone: Int64 = 0
        /// The most entries that were taken and not yet written out at once.
        private(set) var mostInFlight = 0

        /// An entry taken and not yet written out.
        struct Waiting {
            var modified: Int64
            /// Its bytes, as the workers gave them (no doubling growth), or where they were spilled.
            var held: [Held] = []
            /// Where it starts in the archive, once its first byte is written.
            var offset: Int64?
            /// Its central directory record (offset 0), once complete.
            var record: [UInt8]?
            /// Where it ends, once known: a stored entry's, once placed.
            var end: Int64?
            /// Where its next byte goes, when it is a stored entry written at its place, ahead of
            /// the head.
            var inPlace: Int64?
        }

        init(
            items: ArchiveItems, output: ArchiveOutput, workers: Int, readAhead: ReadAhead, budget: Int,
            entriesAhead: Int, spill: Spill, directory: ZipDirectory, directorySpool: Spool
        ) {
            reader = items.reader()
            count = items.count
            self.readAhead = readAhead
            running = workers
            self.output = output
            self.budget = budget
            self.entriesAhead = entriesAhead
            self.spill = spill
            self.directory = directory
            self.directorySpool = directorySpool
        }

        var progress: (entries: Int, bytes: Int64) {
            condition.lock()
            defer { condition.unlock() }
            return (entriesDone, bytesDone)
        }

        func fail(_ error: Error) {
            condition.lock()
            if failure == nil { failure = error }
            condition.broadcast()
            condition.unlock()
        }

        /// True once every worker has stopped; waits up to `seconds` for it.
        func waitUntilFinished(seconds: Double) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            if running > 0 { _ = condition.wait(until: Date(timeIntervalSinceNow: seconds)) }
            return running == 0
        }

        /// One worker: the next entry in order, until there are none or something failed.
        func work(_ worker: Int, level: Int?, fileSystem: FileSystem) {
            defer {
                condition.lock()
                running -= 1
                condition.broadcast()
                condition.unlock()
            }
            // 256 KiB reads: deflate takes them as fast as 1 MiB ones, and each worker has one.
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { buffer.deallocate() }
            do {
                let encoder = try ZipEntryEncoder(level: level, archivePath: output.archivePath)
                while let (index, item) = try take() {
                    try encoder.write(
                        item, buffer: buffer, fileSystem: fileSystem,
                        emit: { try self.emit(index, $0, stored: encoder.isStoring) },
                        place: { try self.place(index, span: $0) }, chunkRead: { self.read($0) })
                    try finish(index, record: encoder.record)
                }
            } catch {
                fail(error)
            }
        }

        /// The next entry in order, once fewer than ``entriesAhead`` wait for their turn.
        private func take() throws -> (Int, ArchiveItem)? {
            condition.lock()
            defer { condition.unlock() }
            while failure == nil && nextToTake - head >= entriesAhead { condition.wait() }
            guard failure == nil, nextToTake < count else { return nil }
            let item: ArchiveItem
            do {
                guard let next = try reader.next() else { return nil }
                item = next
            } catch {
                throw ArchiveError(error, archivePath: output.archivePath)
            }
            let index = nextToTake
            readAhead.reached(index, bytesBefore: bytesTaken)
            waiting[index] = Waiting(modified: item.modified)
            nextToTake += 1
            bytesTaken += item.bytes
            mostInFlight = max(mostInFlight, nextToTake - head)
            return (index, item)
        }

        private func read(_ count: Int) {
            condition.lock()
            bytesDone += Int64(count)
            condition.unlock()
        }

        /// Stored entry `index` spans `span` bytes: once the entry before it has a known end, its
        /// place follows, and its worker writes it there while the head is still being written (two
        /// workers copying photos side by side, not one after the other). Waits until then, or
        /// until its turn comes.
        func place(_ index: Int, span: Int64) throws {
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let failure { throw failure }
                if head == index {
                    waiting[index]?.end = output.position + span
                    condition.broadcast()
                    return
                }
                // The entry before is taken and not yet written out (else `index` would be the head).
                if let start = waiting[index - 1]?.end {
                    waiting[index]?.inPlace = start
                    waiting[index]?.offset = start
                    waiting[index]?.end = start + span
                    condition.broadcast()
                    return
                }
                condition.wait()
            }
        }

        /// The next bytes of entry `index`: to the file if it is its turn, else held (in memory,
        /// then in the scratch file, then waiting while the budgets are spent). The bytes of a
        /// `stored` entry wait for its turn, never held.
        func emit(_ index: Int, _ bytes: UnsafeRawBufferPointer, stored: Bool) throws {
            condition.lock()
            while true {
                if let failure {
                    condition.unlock()
                    throw failure
                }
                if let offset = waiting[index]?.inPlace {
                    waiting[index]?.inPlace = offset + Int64(bytes.count)
                    condition.unlock()
                    try guarded { try output.write(bytes, at: offset) }
                    return
                }
                if head == index {
                    let before = takeHeld(index)
                    if waiting[index]?.offset == nil { waiting[index]?.offset = output.position }
                    condition.unlock()
                    try guarded {
                        try write(before)
                        try output.write(bytes)
                    }
                    releaseSpilled(before)
                    return
                }
                if !stored && heldBytes + bytes.count <= budget {
                    waiting[index]?.held.append(.bytes([UInt8](bytes)))
                    heldBytes += bytes.count
                    condition.unlock()
                    return
                }
                if !stored && spill.hasRoom(for: bytes.count) {
                    // Under the lock: the region is not reused until every spilled byte is written out.
                    var held = waiting[index]?.held ?? []
                    waiting[index]?.held = []
                    do {
                        defer { waiting[index]?.held = held }
                        try spill.append(bytes, to: &held)
                    } catch {
                        if failure == nil { failure = ArchiveError(error, archivePath: output.archivePath) }
                        condition.broadcast()
                        continue
                    }
                    condition.unlock()
                    return
                }
                condition.wait()
            }
        }

        /// Entry `index` is complete, its central directory record `record`: written now if it is
        /// its turn (with the complete ones after it), else left held for the worker whose entry
        /// comes before.
        private func finish(_ index: Int, record: [UInt8]) throws {
            condition.lock()
            defer { condition.unlock() }
            waiting[index]?.record = record
            entriesDone += 1
            guard head == index else { return }
            while head < count, let entry = waiting[head], let record = entry.record {
                // Written in place, ahead: the file's end moves past it.
                if let end = entry.inPlace { output.advance(to: end) }
                let chunks = takeHeld(head)
                let offset = entry.offset ?? output.position
                condition.unlock()
                do {
                    try guarded {
                        try write(chunks)
                        try addRecord(record, offset: offset, modified: entry.modified)
                    }
                } catch {
                    condition.lock()
                    throw error
                }
                condition.lock()
                spill.release(chunks)
                waiting[head] = nil
                head += 1
            }
            condition.broadcast()
        }

        /// Appends an entry's central directory record, with its offset in the archive, to the
        /// spool: in entry order, by the one thread writing the archive.
        private func addRecord(_ record: [UInt8], offset: Int64, modified: Int64) throws {
            _ = try ZipDirectory.recordStarts(in: record, count: 1, archivePath: output.archivePath)
            var rebuilt: [UInt8] = []
            directory.append(recordAt: 0, in: record, offset: UInt64(offset), modified: modified, to: &rebuilt)
            do {
                try directorySpool.append(rebuilt)
            } catch {
                throw ArchiveError(error, archivePath: output.archivePath)
            }
        }

        /// Removes the chunks held for `index` (under the lock); the memory they took is free again.
        private func takeHeld(_ index: Int) -> [Held] {
            let chunks = waiting[index]?.held ?? []
            waiting[index]?.held = []
            for case .bytes(let bytes) in chunks { heldBytes -= bytes.count }
            return chunks
        }

        /// After `chunks` were written out (outside the lock): their spilled region may be reused.
        private func releaseSpilled(_ chunks: [Held]) {
            condition.lock()
            spill.release(chunks)
            condition.broadcast()
            condition.unlock()
        }

        /// Writes held chunks to the archive, spilled ones read back from the scratch file.
        private func write(_ chunks: [Held]) throws(ArchiveError) {
            for chunk in chunks {
                switch chunk {
                case .bytes(let bytes): try output.write(bytes)
                case .spilled(let offset, let count): try spill.copy(offset: offset, count: count, to: output)
                }
            }
        }

        /// Runs a write; a failure stops every worker.
        private func guarded(_ body: () throws -> Void) throws {
            do {
                try body()
            } catch {
                fail(error)
                throw error
            }
        }
    }

    /// Bytes of an entry waiting for its turn.
    enum Held {
        case bytes([UInt8])
        case spilled(offset: Int64, count: Int)
    }

    /// The scratch file entries waiting for their turn spill to once the memory budget is spent,
    /// created on first use beside the archive and unlinked at once. Its regions are appended in
    /// order and reused from the start once every spilled byte has been written to the archive,
    /// so the file never grows past `budget`. Called under the schedule's lock, except ``copy``,
    /// which reads a region nothing else touches until it is released.
    final class Spill: @unchecked Sendable {
        let path: String
        let budget: Int64
        let fileSystem: FileSystem
        private var file: ScratchFile?
        private var end: Int64 = 0
        private var live: Int64 = 0

        init(path: String, budget: Int64, fileSystem: FileSystem) {
            self.path = path
            self.budget = budget
            self.fileSystem = fileSystem
        }

        func hasRoom(for count: Int) -> Bool { end + Int64(count) <= budget }

        /// Writes `bytes` at the end of the used region and records them in `chunks`: the last chunk
        /// grows when it ends where they begin (a worker hands over an entry in pieces).
        func append(_ bytes: UnsafeRawBufferPointer, to chunks: inout [Held]) throws(FileSystemError) {
            let file: ScratchFile
            if let existing = self.file {
                file = existing
            } else {
                file = try fileSystem.createScratchFile(path)
                self.file = file
            }
            try file.write(bytes, at: end)
            if case .spilled(let offset, let count)? = chunks.last, offset + Int64(count) == end {
                chunks[chunks.count - 1] = .spilled(offset: offset, count: count + bytes.count)
            } else {
                chunks.append(.spilled(offset: end, count: bytes.count))
            }
            end += Int64(bytes.count)
            live += Int64(bytes.count)
        }

        func release(_ chunks: [Held]) {
            for case .spilled(_, let count) in chunks { live -= Int64(count) }
            if live == 0 { end = 0 }
        }

        func copy(offset: Int64, count: Int, to output: ArchiveOutput) throws(ArchiveError) {
            guard let file else { return }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: min(count, 1 << 20), alignment: 16)
            defer { buffer.deallocate() }
            var done = 0
            while done < count {
                let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, count - done)])
                let read: Int
                do {
                    read = try file.read(into: slice, at: offset + Int64(done))
                } catch {
                    throw ArchiveError(error, archivePath: output.archivePath)
                }
                guard read > 0 else {
                    throw ArchiveError(
                        cause: .inconsistent, message: "the scratch file \(path) ended early",
                        archivePath: output.archivePath)
                }
                try output.write(UnsafeRawBufferPointer(rebasing: slice[0..<read]))
                done += read
            }
        }
    }
}
