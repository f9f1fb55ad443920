import GRDB
import GRDBSQLite

/// The drawn text values of one batch of rows (``RowBatches``), written end to end into one buffer
/// and bound where they lie (`SQLITE_STATIC`) until the batch's statement has run: no `String`
/// made, checked and freed per value, and no copy of it made and freed by SQLite.
final class TextArena {
    /// Values per row: the table's columns.
    let width: Int
    // (Unchecked: read and written for every value, by one thread; the checks were a third of a
    // value's cost.)
    /// The row of the batch being drawn, and the column whose value is being drawn.
    @exclusivity(unchecked) var row = 0, column = 0
    @exclusivity(unchecked) private var buffer: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) private var capacity = 1 << 16
    @exclusivity(unchecked) private var used = 0
    /// Per value of the batch (row × width + column): where its text starts and its length, -1
    /// when the value is not here.
    @exclusivity(unchecked) private var starts: [Int] = [], lengths: [Int] = []

    init(width: Int) {
        self.width = width
        buffer = .allocate(capacity: capacity)
    }

    deinit { buffer.deallocate() }

    /// Empty, for a batch of `rows` rows.
    func reset(rows: Int) {
        used = 0
        starts = Array(repeating: 0, count: rows * width)
        lengths = Array(repeating: -1, count: rows * width)
    }

    /// The value of ``column`` in ``row``: a text of about `bytes` (``ValueMaker/writeText(into:bytes:unique:random:)``).
    func write(bytes: Int, unique: Int?, random: inout SeededRandom) {
        reserve(ValueMaker.room(forText: bytes))
        let slot = row * width + column
        let length = ValueMaker.writeText(into: buffer + used, bytes: bytes, unique: unique, random: &random)
        (starts[slot], lengths[slot]) = (used, length)
        used += length
    }

    /// The value of ``column`` in ``row``: the date of `unix` (``ColumnDomain/writeDateTime(into:unix:dateOnly:)``).
    func writeDate(_ unix: Int, dateOnly: Bool) {
        reserve(19)
        let slot = row * width + column
        let length = ColumnDomain.writeDateTime(into: buffer + used, unix: unix, dateOnly: dateOnly)
        (starts[slot], lengths[slot]) = (used, length)
        used += length
    }

    /// Room for `room` more bytes.
    private func reserve(_ room: Int) {
        guard used + room > capacity else { return }
        // Moved: values are found by offset, and only bound once the batch is drawn.
        capacity = max(capacity * 2, used + room)
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        larger.update(from: buffer, count: used)
        buffer.deallocate()
        buffer = larger
    }

    /// Binds value `slot` (row × width + column) at `index` of `statement` when it is here, bound
    /// where it lies: the arena must be left as it is until the statement has run.
    func bind(_ slot: Int, to statement: SQLiteStatement, at index: CInt) -> CInt? {
        guard lengths[slot] >= 0 else { return nil }
        return (buffer + starts[slot]).withMemoryRebound(to: CChar.self, capacity: lengths[slot]) {
            sqlite3_bind_text(statement, index, $0, CInt(lengths[slot]), nil)
        }
    }
}
