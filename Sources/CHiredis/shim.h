// hiredis for Swift: typed wrappers for the void-pointer reply API Swift imports awkwardly.
#ifndef CHIREDIS_SHIM_H
#define CHIREDIS_SHIM_H
#include <errno.h>
#include <hiredis/hiredis.h>

/// Reads the next reply of a pipeline into a typed pointer (REDIS_OK or REDIS_ERR; see c->err). On an I/O
/// error, `*error_number` is the errno of the failed socket call, taken before anything else can change it:
/// hiredis 0.14 reports a socket timeout only as REDIS_ERR_IO with EAGAIN/EWOULDBLOCK.
static inline int chiredis_get_reply(redisContext *c, redisReply **reply, int *error_number) {
    errno = 0;
    int rc = redisGetReply(c, (void **)reply);
    *error_number = rc == REDIS_OK ? 0 : errno;
    return rc;
}

/// Whether `error_number` is a socket timeout (SO_RCVTIMEO/SO_SNDTIMEO expiring, or ETIMEDOUT).
static inline int chiredis_is_timeout(int error_number) {
    return error_number == EAGAIN || error_number == EWOULDBLOCK || error_number == ETIMEDOUT;
}

/// The reply's child at `index` (the caller checks `index < reply->elements`).
static inline redisReply *chiredis_element(const redisReply *reply, size_t index) {
    return reply->element[index];
}
#endif
