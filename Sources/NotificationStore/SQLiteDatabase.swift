import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// The owner of one `sqlite3` connection and its prepared statements. Not thread-safe: confined to the
/// SQLite store's queue, its only user.
final class SQLiteDatabase {
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    /// Opens (creating) the database at `path`.
    init(path: String) throws(NotificationStoreFailure) {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &opened, flags, nil)
        guard rc == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(opened)
            throw NotificationStoreFailure("cannot open the SQLite store '\(path)': \(message)")
        }
        handle = opened
        // Another process holding a write lock (a second gateway on the same file) is waited for, briefly.
        sqlite3_busy_timeout(opened, 2_000)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs SQL without results (schema, pragmas).
    func execute(_ sql: String) throws(NotificationStoreFailure) {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            throw failure("executing \(sql.prefix(40))")
        }
    }

    /// The first column of the first row of a query, as text (pragma answers).
    func text(_ sql: String) throws(NotificationStoreFailure) -> String? {
        var found: String?
        try query(sql, bind: []) { row in
            found = row.text(0)
            return false
        }
        return found
    }

    /// A value bound to a statement parameter.
    enum Value {
        case integer(Int64)
        case text(String)
        case blob([UInt8])
        case null

        /// An integer, or NULL for nil.
        static func integer(_ number: Int64?) -> Value { number.map(Value.integer) ?? .null }
    }

    /// What a transaction does: `BEGIN IMMEDIATE` takes the write lock first, so the reads in a write
    /// transaction see what its writes will change; a read transaction (`BEGIN`) sees one snapshot of the file
    /// for all its queries, while (in WAL mode) a writer on another connection commits without waiting.
    enum TransactionMode: String {
        case write = "BEGIN IMMEDIATE"
        case read = "BEGIN"
    }

    /// Runs `body` in one transaction: committed when `body` returns, rolled back when it throws.
    func inTransaction<Outcome>(_ mode: TransactionMode, _ body: () throws(NotificationStoreFailure) -> Outcome)
        throws(NotificationStoreFailure) -> Outcome
    {
        try query(mode.rawValue, bind: []) { _ in false }
        do {
            let result = try body()
            try query("COMMIT", bind: []) { _ in false }
            return result
        } catch {
            // A failed COMMIT may leave the transaction open; ROLLBACK ends it (and fails harmlessly if not).
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    /// Runs `sql` with `bind`, calling `row` for each result row while it returns true.
    func query(_ sql: String, bind: [Value], row: (Row) throws(NotificationStoreFailure) -> Bool)
        throws(NotificationStoreFailure)
    {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, value) in bind.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .integer(let number): rc = sqlite3_bind_int64(statement, index, number)
            case .text(let text):
                // SQLite copies the bytes (the shim's SQLITE_TRANSIENT) before the C string goes away.
                rc = text.withCString { chars in
                    csqlite_bind_text(statement, index, chars, Int32(clamping: text.utf8.count))
                }
            case .blob(let bytes):
                // Copied too (SQLITE_TRANSIENT in the shim); an empty blob stays a blob, not NULL.
                rc = bytes.withUnsafeBytes { raw in
                    csqlite_bind_blob(statement, index, raw.baseAddress, Int32(clamping: raw.count))
                }
            case .null: rc = sqlite3_bind_null(statement, index)
            }
            guard rc == SQLITE_OK else { throw failure("binding") }
        }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                if try !row(Row(statement: statement)) { return }
            case SQLITE_DONE:
                return
            default:
                throw failure("running \(sql.prefix(40))")
            }
        }
    }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// One result row, valid during the `query` callback only.
    struct Row {
        let statement: OpaquePointer
        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
        func text(_ column: Int32) -> String {
            guard let bytes = sqlite3_column_text(statement, column) else { return "" }
            let count = Int(sqlite3_column_bytes(statement, column))
            return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        }
        /// The text in `column` when it is at most `limit` bytes long; nil when longer. Invalid UTF-8 (a damaged
        /// file) is repaired, never trapped on.
        func text(_ column: Int32, limit: Int) -> String? {
            guard let bytes = sqlite3_column_text(statement, column) else { return "" }
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count <= limit else { return nil }
            return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        }
        /// Calls `body` with the blob in `column`, in place (valid during the call only): empty for NULL or a
        /// zero-length blob; nil without calling `body` when longer than `limit` bytes.
        func withBlob<Decoded>(
            _ column: Int32, limit: Int, _ body: (UnsafeRawBufferPointer) throws(NotificationStoreFailure) -> Decoded
        ) throws(NotificationStoreFailure) -> Decoded? {
            // sqlite3_column_blob before sqlite3_column_bytes: the pointer stays valid that way (sqlite3.h).
            let bytes = sqlite3_column_blob(statement, column)
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count <= limit else { return nil }
            guard let bytes, count > 0 else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
            return try body(UnsafeRawBufferPointer(start: bytes, count: count))
        }
    }

    private func prepared(_ sql: String) throws(NotificationStoreFailure) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw failure("preparing \(sql.prefix(40))")
        }
        statements[sql] = statement
        return statement
    }

    private func failure(_ doing: String) -> NotificationStoreFailure {
        let message = String(cString: sqlite3_errmsg(handle))
        return NotificationStoreFailure("SQLite store: \(doing): \(message)")
    }
}
