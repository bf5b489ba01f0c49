// hiredis for Swift: only its RESP reply parser and its command formatter (the gateway owns the socket and
// the TLS session itself: Debian 12's hiredis 0.14 has no TLS), with bounds on every reply it builds.
#ifndef CHIREDIS_SHIM_H
#define CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#include <hiredis/read.h>

/// Which bound refused a reply.
enum {
    CHIREDIS_WITHIN_BOUNDS = 0,
    CHIREDIS_STRING_TOO_LONG = 1,
    CHIREDIS_TOO_MANY_ELEMENTS = 2,
    CHIREDIS_TOO_DEEP = 3,
};

/// The bounds of one reader: hiredis 0.14 allocates whatever a reply header announces ("*2147483647" alone
/// would make it calloc 16 GiB), so the reader's object functions are these wrappers, which refuse the
/// reply (hiredis then reports an out-of-memory error) before anything is allocated past a bound. The reader
/// points at `functions` and keeps the struct as its privdata: it must outlive the reader.
typedef struct chiredis_bounds {
    redisReplyObjectFunctions functions;
    /// hiredis's own object functions, which build the `redisReply` objects.
    redisReplyObjectFunctions *inner;
    /// Longest string, status or error.
    size_t max_string_bytes;
    /// Most array elements in one reply, every nested array counted.
    long long max_elements;
    /// Deepest array nesting (1: a flat array).
    int max_depth;
    /// Array elements announced so far by the reply being read (reset to 0 when a reply completes).
    long long elements;
    /// The first bound that refused the reply being read, or CHIREDIS_WITHIN_BOUNDS.
    int exceeded;
} chiredis_bounds;

static inline void *chiredis_bounded_string(const redisReadTask *task, char *str, size_t len) {
    chiredis_bounds *bounds = (chiredis_bounds *)task->privdata;
    if (len > bounds->max_string_bytes) {
        bounds->exceeded = CHIREDIS_STRING_TOO_LONG;
        return NULL;
    }
    return bounds->inner->createString(task, str, len);
}

static inline void *chiredis_bounded_array(const redisReadTask *task, int elements) {
    chiredis_bounds *bounds = (chiredis_bounds *)task->privdata;
    int depth = 1;
    for (const redisReadTask *parent = task->parent; parent != NULL; parent = parent->parent) depth += 1;
    if (depth > bounds->max_depth) {
        bounds->exceeded = CHIREDIS_TOO_DEEP;
        return NULL;
    }
    if (elements < 0 || elements > bounds->max_elements - bounds->elements) {
        bounds->exceeded = CHIREDIS_TOO_MANY_ELEMENTS;
        return NULL;
    }
    bounds->elements += elements;
    return bounds->inner->createArray(task, elements);
}

static inline void *chiredis_bounded_integer(const redisReadTask *task, long long value) {
    return ((chiredis_bounds *)task->privdata)->inner->createInteger(task, value);
}

static inline void *chiredis_bounded_nil(const redisReadTask *task) {
    return ((chiredis_bounds *)task->privdata)->inner->createNil(task);
}

/// A reader whose replies `bounds` limits (NULL when out of memory); free it with redisReaderFree before
/// `bounds`.
static inline redisReader *chiredis_reader_create(chiredis_bounds *bounds) {
    redisReader *reader = redisReaderCreate();
    if (reader == NULL) return NULL;
    bounds->inner = reader->fn;
    bounds->functions.createString = chiredis_bounded_string;
    bounds->functions.createArray = chiredis_bounded_array;
    bounds->functions.createInteger = chiredis_bounded_integer;
    bounds->functions.createNil = chiredis_bounded_nil;
    bounds->functions.freeObject = bounds->inner->freeObject;
    bounds->elements = 0;
    bounds->exceeded = CHIREDIS_WITHIN_BOUNDS;
    reader->fn = &bounds->functions;
    reader->privdata = bounds;
    return reader;
}

/// The next complete reply, typed (REDIS_OK with NULL when more bytes are needed; REDIS_ERR: see reader->err).
static inline int chiredis_reader_get_reply(redisReader *reader, redisReply **reply) {
    return redisReaderGetReply(reader, (void **)reply);
}

/// Bytes fed to `reader` that no reply has consumed yet.
static inline size_t chiredis_reader_unread(const redisReader *reader) { return reader->len - reader->pos; }

/// The reply's child at `index` (the caller checks `index < reply->elements`).
static inline redisReply *chiredis_element(const redisReply *reply, size_t index) {
    return reply->element[index];
}
#endif
