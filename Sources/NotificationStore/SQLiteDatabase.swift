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
    }

    /// Runs `sql` with `bind`, calling `row` for each result row while it returns true.
    func query(_ sql: String, bind: [Value], row: (Row) -> Bool) throws(NotificationStoreFailure) {
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
            }
            guard rc == SQLITE_OK else { throw failure("binding") }
        }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                if !row(Row(statement: statement)) { return }
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
        func text(_ column: Int32) -> String {
            guard let bytes = sqlite3_column_text(statement, column) else { return "" }
            let count = Int(sqlite3_column_bytes(statement, column))
            return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
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
