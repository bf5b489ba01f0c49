/// A result column: its name and type (`PostgresType` names the common OIDs).
package struct PostgresColumn: Sendable, Hashable {
    package let name: String
    package let typeOID: UInt32

    package init(name: String, typeOID: UInt32) {
        self.name = name
        self.typeOID = typeOID
    }
}

/// What a statement returned: its columns, its rows (cells in PostgreSQL's text form, kept in one buffer) and its
/// command tag. Built within `PostgresResultLimits`, so its size is bounded by them.
package struct PostgresRows: Sendable, RandomAccessCollection {
    package let columns: [PostgresColumn]
    /// The server's command tag: `SELECT 3`, `INSERT 0 1`, `UPDATE 2`, `BEGIN`, … (empty for a prepare).
    package let commandTag: String
    /// Every cell's bytes, row by row.
    let storage: [UInt8]
    /// Per cell (row-major): its start in `storage`.
    let starts: [Int]
    /// Per cell: its length, or -1 for NULL.
    let lengths: [Int32]
    package let count: Int

    init(columns: [PostgresColumn], commandTag: String, storage: [UInt8], starts: [Int], lengths: [Int32], count: Int) {
        self.columns = columns
        self.commandTag = commandTag
        self.storage = storage
        self.starts = starts
        self.lengths = lengths
        self.count = count
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int { count }

    package subscript(position: Int) -> PostgresRow {
        precondition(position >= 0 && position < count, "row \(position) of \(count)")
        return PostgresRow(rows: self, index: position)
    }

    /// The rows the statement inserted, updated, deleted, selected, merged, moved, fetched or copied (the command
    /// tag's last number); nil for a tag without one (`BEGIN`, `CREATE TABLE`).
    package var affectedRows: Int? {
        let words = commandTag.split(separator: " ")
        guard let verb = words.first, words.count >= 2,
            ["INSERT", "UPDATE", "DELETE", "SELECT", "MERGE", "MOVE", "FETCH", "COPY"].contains(verb)
        else { return nil }
        return words.last.flatMap { Int($0) }
    }

    /// The index of the first column named `name`, if any.
    package func column(named name: String) -> Int? {
        columns.firstIndex { $0.name == name }
    }

    /// The cell at `row`, `column`.
    func cell(row: Int, column: Int) -> PostgresCell {
        guard column >= 0 && column < columns.count else {
            return PostgresCell(column: nil, bytes: nil, label: "column \(column)")
        }
        let index = row * columns.count + column
        let length = Int(lengths[index])
        let bytes = length < 0 ? nil : storage[starts[index]..<starts[index] + length]
        return PostgresCell(column: columns[column], bytes: bytes, label: columns[column].name)
    }
}

/// One row of a `PostgresRows`.
package struct PostgresRow: Sendable {
    let rows: PostgresRows
    package let index: Int

    /// The cell in column `column` (a cell that fails every decoding when there is no such column).
    package subscript(column: Int) -> PostgresCell { rows.cell(row: index, column: column) }

    /// The cell in the first column named `name` (a cell that fails every decoding when there is none).
    package subscript(name: String) -> PostgresCell {
        guard let column = rows.column(named: name) else {
            return PostgresCell(column: nil, bytes: nil, label: name)
        }
        return rows.cell(row: index, column: column)
    }
}

/// One cell in PostgreSQL's text form, decoded on request. Each decoder answers nil for NULL and fails with a
/// `.decoding` error for text that is not what was asked for (or a column that does not exist).
package struct PostgresCell: Sendable {
    /// The cell's column; nil when the row has no such column.
    package let column: PostgresColumn?
    /// The raw text form; nil for NULL.
    package let bytes: ArraySlice<UInt8>?
    /// How the cell was asked for (for errors).
    let label: String

    package var isNull: Bool { bytes == nil }

    /// The text of the cell.
    package func string() throws(PostgresError) -> String? {
        guard let bytes = try present() else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw failure("is not UTF-8") }
        return text
    }

    /// An integer cell (`int2`, `int4`, `int8`, `oid`, or any text that is one).
    package func int() throws(PostgresError) -> Int64? {
        guard let text = try string() else { return nil }
        guard let value = Int64(text) else { throw failure("is not an integer") }
        return value
    }

    /// A floating-point cell (`float4`, `float8`, a `numeric` that fits, `Infinity`, `NaN`).
    package func double() throws(PostgresError) -> Double? {
        guard let text = try string() else { return nil }
        switch text {
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        case "NaN": return .nan
        default: break
        }
        guard let value = Double(text), value.isFinite else { throw failure("is not a number") }
        return value
    }

    /// A boolean cell (`t` or `f`).
    package func bool() throws(PostgresError) -> Bool? {
        guard let bytes = try present() else { return nil }
        switch Array(bytes) {
        case [UInt8(ascii: "t")]: return true
        case [UInt8(ascii: "f")]: return false
        default: throw failure("is not a boolean")
        }
    }

    /// The bytes of a `bytea` cell (its hex text form, `\x…`, decoded); for another type, the text form's bytes.
    package func data() throws(PostgresError) -> [UInt8]? {
        guard let bytes = try present() else { return nil }
        guard column?.typeOID == PostgresType.bytea else { return Array(bytes) }
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\\"), bytes[bytes.startIndex + 1] == UInt8(ascii: "x"),
            bytes.count % 2 == 0
        else { throw failure("is not bytea in hex form") }
        let count = (bytes.count - 2) / 2
        var valid = true
        let decoded = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = 0
            Self.hexValues.withUnsafeBufferPointer { values in
                bytes.withUnsafeBufferPointer { text in
                    var index = 2
                    while initialized < count {
                        let high = values[Int(text[index])]
                        let low = values[Int(text[index + 1])]
                        guard high | low < 16 else {
                            valid = false
                            return
                        }
                        buffer[initialized] = high << 4 | low
                        initialized += 1
                        index += 2
                    }
                }
            }
        }
        guard valid else { throw failure("is not bytea in hex form") }
        return decoded
    }

    private func present() throws(PostgresError) -> ArraySlice<UInt8>? {
        guard column != nil else { throw PostgresError(.decoding, "the result has no column \(label)") }
        return bytes
    }

    private func failure(_ what: String) -> PostgresError {
        PostgresError(.decoding, "column \(label) \(what)")
    }

    /// Each byte's value as a hexadecimal digit; 255 for a byte that is none.
    private static let hexValues: [UInt8] = (0...255).map { byte -> UInt8 in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt8(byte) - UInt8(ascii: "A") + 10
        default: 255
        }
    }
}

/// How large one statement's result may grow before the call fails with `.resultTooLarge`: the rest of the
/// result is then discarded row by row as it arrives (and the statement cancelled on the server), so a hostile or
/// mistaken query costs at most one row beyond the bounds in memory. One row is held by libpq whole before it is
/// counted, so a single value is bounded only by the server's own limit (1 GB).
package struct PostgresResultLimits: Sendable, Hashable {
    /// Most rows in one result.
    package var maxRows: Int
    /// Most bytes in one result: every cell's text plus 12 bytes of bookkeeping per cell.
    package var maxBytes: Int

    package init(maxRows: Int = 100_000, maxBytes: Int = 64 << 20) {
        self.maxRows = maxRows
        self.maxBytes = maxBytes
    }
}
