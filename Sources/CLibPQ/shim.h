// libpq for Swift: what its header says in macros Swift does not import (the diagnostic field codes are character
// literals) and a notice processor that keeps the server's NOTICEs off the process's stderr. Everything else is
// called directly.
#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>

/// The fields of an error result `PQresultErrorField` reads (PG_DIAG_*).
enum {
    CLIBPQ_DIAG_SEVERITY = PG_DIAG_SEVERITY_NONLOCALIZED,
    CLIBPQ_DIAG_SQLSTATE = PG_DIAG_SQLSTATE,
    CLIBPQ_DIAG_MESSAGE_PRIMARY = PG_DIAG_MESSAGE_PRIMARY,
    CLIBPQ_DIAG_MESSAGE_DETAIL = PG_DIAG_MESSAGE_DETAIL,
    CLIBPQ_DIAG_MESSAGE_HINT = PG_DIAG_MESSAGE_HINT,
    CLIBPQ_DIAG_CONSTRAINT_NAME = PG_DIAG_CONSTRAINT_NAME,
    CLIBPQ_DIAG_SOURCE_FUNCTION = PG_DIAG_SOURCE_FUNCTION,
};

static inline void clibpq_ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

/// Drops the connection's notices and warnings (libpq's default prints them to stderr, where they would interleave
/// with the process's log lines).
static inline void clibpq_silence_notices(PGconn *conn) { PQsetNoticeProcessor(conn, clibpq_ignore_notice, NULL); }
#endif
