// libcurl for Swift: typed wrappers for the variadic setopt/getinfo calls Swift cannot import.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>

static inline CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_write(CURL *h, CURLoption o, curl_write_callback cb) { return curl_easy_setopt(h, o, cb); }
static inline CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ccurl_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_ptr(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_socketfunction(CURLM *m, curl_socket_callback cb) {
    return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, cb);
}
static inline CURLMcode ccurl_multi_setopt_timerfunction(CURLM *m, curl_multi_timer_callback cb) {
    return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, cb);
}
static inline CURLSHcode ccurl_share_setopt_long(CURLSH *s, CURLSHoption o, long v) { return curl_share_setopt(s, o, v); }
static inline CURLSHcode ccurl_share_setopt_ptr(CURLSH *s, CURLSHoption o, void *v) { return curl_share_setopt(s, o, v); }
static inline CURLSHcode ccurl_share_setopt_lockfunction(CURLSH *s, curl_lock_function f) {
    return curl_share_setopt(s, CURLSHOPT_LOCKFUNC, f);
}
static inline CURLSHcode ccurl_share_setopt_unlockfunction(CURLSH *s, curl_unlock_function f) {
    return curl_share_setopt(s, CURLSHOPT_UNLOCKFUNC, f);
}
#endif
