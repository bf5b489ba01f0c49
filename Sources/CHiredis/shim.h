// hiredis for Swift: typed wrappers for the void-pointer reply API Swift imports awkwardly.
#ifndef CHIREDIS_SHIM_H
#define CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>

/// Reads the next reply of a pipeline into a typed pointer (REDIS_OK or REDIS_ERR; see c->err).
static inline int chiredis_get_reply(redisContext *c, redisReply **reply) {
    return redisGetReply(c, (void **)reply);
}

/// The reply's child at `index` (the caller checks `index < reply->elements`).
static inline redisReply *chiredis_element(const redisReply *reply, size_t index) {
    return reply->element[index];
}
#endif
