/* h2load for many request bodies: unary gRPC calls over h2c, each request's body the next of a set of
 * pre-encoded gRPC frames (cycled in order), as many connections and concurrent streams as asked, on one thread.
 * h2load posts one body over and over; a benchmark of "random ids" needs each call to name another one.
 * Built and run by bench/subscription_state.sh (cc, libnghttp2); not part of the gateway.
 *
 *   grpc_bodies HOST PORT PATH BODIES CONNECTIONS STREAMS WARMUP_S SECONDS [LATENCY_FILE]
 *
 * BODIES is a file of gRPC frames back to back (each: flag byte, 4-byte big-endian length, message). Calls
 * finishing in the WARMUP_S seconds after the first request are not counted; the next SECONDS are. Prints one
 * line: `calls N ok N failed N seconds S rate R p50_us A p90_us B p99_us C max_us D all M` (latency: request
 * submitted to stream closed, measured calls only; M: every call that ended, warm-up included); with
 * LATENCY_FILE, every measured latency in µs, one a line. A call is OK when its grpc-status (trailers, or a
 * trailers-only answer) is 0; the first failure's status is printed to stderr. Exits 1 when any call failed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct frame { const uint8_t *bytes; size_t count; };
struct call { uint64_t started; size_t frame; size_t sent; int status; struct connection *connection; };
struct connection {
    int fd;
    nghttp2_session *session;
    int want_write;
    uint8_t pending[262144]; /* bytes nghttp2 produced, not yet taken by the socket */
    size_t pending_count;
};

static struct frame *frames;
static size_t frame_count, next_frame;
static const char *host, *port, *path;
static char authority[300];
static uint64_t start_ns, measure_from, measure_until;
static int stopping;
static uint64_t calls, ok, failed, finished; /* finished: every call that ended, warm-up included */
static uint64_t *latencies;
static size_t latency_count, latency_capacity;
static int reported_failure;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what) { perror(what); exit(2); }

static ssize_t read_body(nghttp2_session *session, int32_t stream, uint8_t *buffer, size_t length,
                         uint32_t *flags, nghttp2_data_source *source, void *user) {
    (void)session; (void)stream; (void)user;
    struct call *call = source->ptr;
    const struct frame *frame = &frames[call->frame];
    size_t left = frame->count - call->sent;
    size_t count = left < length ? left : length;
    memcpy(buffer, frame->bytes + call->sent, count);
    call->sent += count;
    if (call->sent == frame->count) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)count;
}

#define HEADER(name, value) \
    { (uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, strlen(value), NGHTTP2_NV_FLAG_NONE }

static void submit(struct connection *connection) {
    struct call *call = calloc(1, sizeof *call);
    if (!call) die("calloc");
    call->frame = next_frame;
    next_frame = (next_frame + 1) % frame_count;
    call->status = -1;
    call->connection = connection;
    call->started = now_ns();
    nghttp2_nv headers[] = {
        HEADER(":method", "POST"), HEADER(":scheme", "http"), HEADER(":path", path),
        HEADER(":authority", authority), HEADER("content-type", "application/grpc"), HEADER("te", "trailers"),
    };
    nghttp2_data_provider body = { .source = { .ptr = call }, .read_callback = read_body };
    int32_t stream = nghttp2_submit_request(connection->session, NULL, headers, sizeof headers / sizeof *headers,
                                            &body, call);
    if (stream < 0) { fprintf(stderr, "submit: %s\n", nghttp2_strerror(stream)); exit(2); }
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user) {
    (void)flags; (void)user;
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
        struct call *call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (call) {
            char text[16] = {0};
            memcpy(text, value, valuelen < 15 ? valuelen : 15);
            call->status = atoi(text);
        }
    }
    return 0;
}

static int on_close(nghttp2_session *session, int32_t stream, uint32_t error, void *user) {
    (void)error;
    struct connection *connection = user;
    struct call *call = nghttp2_session_get_stream_user_data(session, stream);
    if (!call) return 0;
    uint64_t ended = now_ns();
    finished++;
    if (ended >= measure_from && ended < measure_until) {
        calls++;
        if (call->status == 0) ok++; else {
            failed++;
            if (!reported_failure) {
                fprintf(stderr, "a call failed: grpc-status %d, stream error %u\n", call->status, error);
                reported_failure = 1;
            }
        }
        if (latency_count == latency_capacity) {
            latency_capacity = latency_capacity ? latency_capacity * 2 : 1 << 20;
            latencies = realloc(latencies, latency_capacity * sizeof *latencies);
            if (!latencies) die("realloc");
        }
        latencies[latency_count++] = (ended - call->started) / 1000;
    }
    free(call);
    if (ended >= measure_until) stopping = 1;
    if (!stopping) submit(connection);
    return 0;
}

/* Writes what nghttp2 has to send, gathered into one buffer per write (as h2load does: a frame per write(2)
 * would cost the driver a system call per frame); what the socket does not take waits for EPOLLOUT. A chunk
 * from nghttp2 is one frame (at most 16 KiB of DATA here), so gathering stops with room for one more. */
static void flush(struct connection *connection) {
    for (;;) {
        while (connection->pending_count + 32768 <= sizeof connection->pending) {
            const uint8_t *data;
            ssize_t count = nghttp2_session_mem_send(connection->session, &data);
            if (count < 0) { fprintf(stderr, "send: %s\n", nghttp2_strerror((int)count)); exit(2); }
            if (count == 0) break;
            if ((size_t)count > sizeof connection->pending - connection->pending_count) {
                fprintf(stderr, "a frame larger than the send buffer\n");
                exit(2);
            }
            memcpy(connection->pending + connection->pending_count, data, (size_t)count);
            connection->pending_count += (size_t)count;
        }
        if (!connection->pending_count) { connection->want_write = 0; return; }
        ssize_t n = write(connection->fd, connection->pending, connection->pending_count);
        if (n < 0) {
            if (errno == EAGAIN) { connection->want_write = 1; return; }
            die("write");
        }
        memmove(connection->pending, connection->pending + n, connection->pending_count - (size_t)n);
        connection->pending_count -= (size_t)n;
        if (connection->pending_count) { connection->want_write = 1; return; }  /* the socket is full */
    }
}

static int sort_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t percentile(double p) {
    if (!latency_count) return 0;
    size_t index = (size_t)(p * (double)(latency_count - 1) + 0.5);
    return latencies[index];
}

int main(int argc, char **argv) {
    if (argc < 9) {
        fprintf(stderr, "usage: grpc_bodies HOST PORT PATH BODIES CONNECTIONS STREAMS WARMUP_S SECONDS [LATENCY_FILE]\n");
        return 2;
    }
    host = argv[1]; port = argv[2]; path = argv[3];
    int connection_count = atoi(argv[5]), streams = atoi(argv[6]);
    double warmup = atof(argv[7]), seconds = atof(argv[8]);
    snprintf(authority, sizeof authority, "%s:%s", host, port);

    /* The bodies, split into frames. */
    FILE *file = fopen(argv[4], "rb");
    if (!file) die(argv[4]);
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    uint8_t *all = malloc((size_t)size);
    if (!all || fread(all, 1, (size_t)size, file) != (size_t)size) die("read bodies");
    fclose(file);
    size_t capacity = 1024;
    frames = malloc(capacity * sizeof *frames);
    for (size_t at = 0; at + 5 <= (size_t)size;) {
        size_t length = ((size_t)all[at + 1] << 24) | ((size_t)all[at + 2] << 16) | ((size_t)all[at + 3] << 8) |
                        all[at + 4];
        if (at + 5 + length > (size_t)size) { fprintf(stderr, "a truncated frame in %s\n", argv[4]); return 2; }
        if (frame_count == capacity) frames = realloc(frames, (capacity *= 2) * sizeof *frames);
        frames[frame_count++] = (struct frame){ all + at, 5 + length };
        at += 5 + length;
    }
    if (!frame_count) { fprintf(stderr, "no frames in %s\n", argv[4]); return 2; }

    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *address;
    if (getaddrinfo(host, port, &hints, &address) != 0) die("getaddrinfo");
    nghttp2_session_callbacks *callbacks;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
    int poll = epoll_create1(0);
    struct connection *connections = calloc((size_t)connection_count, sizeof *connections);
    start_ns = now_ns();
    measure_from = start_ns + (uint64_t)(warmup * 1e9);
    measure_until = measure_from + (uint64_t)(seconds * 1e9);
    for (int i = 0; i < connection_count; i++) {
        struct connection *c = &connections[i];
        c->fd = socket(address->ai_family, SOCK_STREAM, 0);
        if (c->fd < 0 || connect(c->fd, address->ai_addr, address->ai_addrlen) != 0) die("connect");
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        nghttp2_session_client_new(&c->session, callbacks, c);
        /* Windows as large as h2load's defaults (-w 30 -W 30): flow control never paces the answers. */
        nghttp2_settings_entry settings[] = {
            { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100 },
            { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (1u << 30) - 1 },
        };
        nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 2);
        nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, (1 << 30) - 1);
        for (int s = 0; s < streams; s++) submit(c);
        flush(c);
        struct epoll_event event = { .events = EPOLLIN | (c->want_write ? EPOLLOUT : 0), .data.ptr = c };
        epoll_ctl(poll, EPOLL_CTL_ADD, c->fd, &event);
    }
    freeaddrinfo(address);

    static uint8_t buffer[1 << 18];
    struct epoll_event events[64];
    /* Until the window ends; calls still in flight then are not counted (nor waited for). */
    while (!stopping) {
        int n = epoll_wait(poll, events, 64, 100);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int e = 0; e < n; e++) {
            struct connection *c = events[e].data.ptr;
            if (events[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                for (;;) {
                    ssize_t got = read(c->fd, buffer, sizeof buffer);
                    if (got < 0) {
                        if (errno == EAGAIN) break;
                        die("read");
                    }
                    if (got == 0) { fprintf(stderr, "the server closed a connection\n"); return 2; }
                    ssize_t used = nghttp2_session_mem_recv(c->session, buffer, (size_t)got);
                    if (used < 0) { fprintf(stderr, "recv: %s\n", nghttp2_strerror((int)used)); return 2; }
                    if ((size_t)got < sizeof buffer) break;
                }
            }
            flush(c);
            struct epoll_event event = { .events = EPOLLIN | (c->want_write ? EPOLLOUT : 0), .data.ptr = c };
            epoll_ctl(poll, EPOLL_CTL_MOD, c->fd, &event);
        }
        if (now_ns() >= measure_until) stopping = 1;
    }

    qsort(latencies, latency_count, sizeof *latencies, sort_u64);
    printf("calls %llu ok %llu failed %llu seconds %.3f rate %.1f p50_us %llu p90_us %llu p99_us %llu max_us %llu "
           "all %llu\n",
           (unsigned long long)calls, (unsigned long long)ok, (unsigned long long)failed, seconds,
           (double)ok / seconds, (unsigned long long)percentile(0.50), (unsigned long long)percentile(0.90),
           (unsigned long long)percentile(0.99), (unsigned long long)(latency_count ? latencies[latency_count - 1] : 0),
           (unsigned long long)finished);
    if (argc > 9) {
        FILE *out = fopen(argv[9], "w");
        if (!out) die(argv[9]);
        for (size_t i = 0; i < latency_count; i++) fprintf(out, "%llu\n", (unsigned long long)latencies[i]);
        fclose(out);
    }
    for (int i = 0; i < connection_count; i++) { nghttp2_session_del(connections[i].session); close(connections[i].fd); }
    nghttp2_session_callbacks_del(callbacks);
    return failed ? 1 : 0;
}
