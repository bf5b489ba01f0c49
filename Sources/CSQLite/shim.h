// SQLite 3 for Swift: the SQLITE_TRANSIENT destructor is a cast Swift cannot import, so bindings that copy
// their argument are wrapped here.
#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/// Binds `length` bytes of UTF-8 text, copied by SQLite before the call returns.
static inline int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

/// Binds `length` bytes of a blob, copied by SQLite before the call returns (a zero-length blob, not NULL, when
/// `length` is 0).
static inline int csqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length) {
    if (length == 0) return sqlite3_bind_zeroblob(statement, index, 0);
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_TRANSIENT);
}
#endif
