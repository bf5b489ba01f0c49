/* The libcurl floor for one GetHistory page: sequential GETs of URL over one reused HTTP/2 TLS connection,
 * the way the gateway's upstream thread drives libcurl (a multi handle, a fresh easy handle per request,
 * PIPEWAIT, the body appended to memory), and the CPU time this thread spent per request (getrusage
 * RUSAGE_THREAD). Built and run by bench/upstream_floor.sh; not part of the gateway.
 *
 *   curl_page URL AUTHORIZATION CA_FILE REQUESTS
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct body { char *bytes; size_t count, capacity; };

static size_t append(char *data, size_t size, size_t items, void *user) {
    struct body *body = user;
    size_t count = size * items;
    if (body->count + count > body->capacity) {
        size_t capacity = body->capacity ? body->capacity * 2 : 65536;
        while (capacity < body->count + count) capacity *= 2;
        char *grown = realloc(body->bytes, capacity);
        if (!grown) return 0;
        body->bytes = grown;
        body->capacity = capacity;
    }
    memcpy(body->bytes + body->count, data, count);
    body->count += count;
    return count;
}

static double thread_cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

/* One request, to completion; returns the HTTP status (0 on a transport failure). */
static long get(CURLM *multi, const char *url, struct curl_slist *headers, const char *ca, struct body *body) {
    CURL *easy = curl_easy_init();
    if (!easy) return 0;
    body->count = 0;
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CAINFO, ca);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, append);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, body);
    curl_multi_add_handle(multi, easy);
    int running = 1;
    while (running) {
        if (curl_multi_perform(multi, &running) != CURLM_OK) break;
        if (running) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(multi, easy);
    curl_easy_cleanup(easy);
    return status;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: curl_page URL AUTHORIZATION CA_FILE REQUESTS\n");
        return 2;
    }
    const char *url = argv[1], *ca = argv[3];
    int requests = atoi(argv[4]);
    char authorization[8192];
    snprintf(authorization, sizeof authorization, "authorization: %s", argv[2]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    struct curl_slist *headers = curl_slist_append(NULL, authorization);
    struct body body = {0};
    /* The connection, TLS session and HPACK tables warm, as the gateway's are. */
    if (get(multi, url, headers, ca, &body) != 200) {
        fprintf(stderr, "the warm-up request failed\n");
        return 1;
    }
    size_t bytes = 0;
    struct timespec pause = {0, 25 * 1000 * 1000}; /* 40 requests/s: under Apple's 50/s the simulator enforces */
    /* The whole loop is measured, each wake-up from the pause included, as the gateway's thread is measured
     * from the scheduler's count: it too sleeps between calls and is woken for each. */
    double before = thread_cpu_seconds();
    for (int i = 0; i < requests; i++) {
        nanosleep(&pause, NULL);
        long status = get(multi, url, headers, ca, &body);
        if (status != 200) {
            fprintf(stderr, "request %d: HTTP %ld\n", i, status);
            return 1;
        }
        bytes += body.count;
    }
    printf("%.1f %zu\n", (thread_cpu_seconds() - before) / requests * 1e6, bytes / requests);
    curl_slist_free_all(headers);
    curl_multi_cleanup(multi);
    free(body.bytes);
    return 0;
}
