// Posts pre-encoded notification bodies to a webhook over CONNECTIONS keep-alive HTTP/1.1 connections at once,
// each connection its own thread posting its share (body i goes to connection i % CONNECTIONS) one after another,
// as fast as the webhook answers. A load generator that costs a few microseconds a notification, so the gateway,
// not the poster, is what the ingestion benchmarks measure (bench/webhook.py --state, bench/postgres.py).
//
//   webhook_post HOST PORT PATH CONNECTIONS BODIES_FILE SAMPLE_EVERY
//
// BODIES_FILE holds the bodies one after another, each preceded by its length in decimal and a newline. Output,
// one line each, times in seconds of CLOCK_MONOTONIC (what Python's time.perf_counter reads on Linux):
//   start T                 the first POST is about to be sent
//   ack INDEX T             body INDEX was answered 200 (every SAMPLE_EVERY-th body only; 0: none)
//   done T FAILURES         every body was answered; FAILURES answers were not 200
// Exits 1 on a connection error (the message on stderr).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    char *data;
    size_t length;
} Body;

static Body *bodies;
static size_t body_count;
static int connections;
static int sample_every;
static struct sockaddr_in address;
static const char *host;
static const char *path;
static atomic_long failures;
static pthread_mutex_t output = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "webhook_post: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void send_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t sent = send(fd, data, length, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) continue;
            die("send");
        }
        data += sent;
        length -= (size_t)sent;
    }
}

// Appends what the socket has (at least one byte) to the held bytes of buffer.
static void receive_more(int fd, char *buffer, size_t capacity, size_t *held) {
    for (;;) {
        ssize_t got = recv(fd, buffer + *held, capacity - *held, 0);
        if (got > 0) {
            *held += (size_t)got;
            return;
        }
        if (got == 0) {
            errno = ECONNRESET;
            die("the webhook closed the connection");
        }
        if (errno != EINTR) die("recv");
    }
}

// Reads one response (status line, headers, a Content-Length body) from fd into buffer, keeping any bytes past
// it at the buffer's start; returns the status.
static int read_response(int fd, char *buffer, size_t capacity, size_t *held) {
    for (;;) {
        char *end = memmem(buffer, *held, "\r\n\r\n", 4);
        if (end) {
            size_t head = (size_t)(end - buffer) + 4;
            int status = 0;
            if (sscanf(buffer, "HTTP/1.%*d %d", &status) != 1) {
                errno = EPROTO;
                die("a response without a status line");
            }
            size_t length = 0;
            for (char *line = buffer; line < end; line = strstr(line, "\r\n") + 2) {
                if (strncasecmp(line, "content-length:", 15) == 0) length = strtoul(line + 15, NULL, 10);
                if (strncasecmp(line, "transfer-encoding:", 18) == 0) {
                    errno = EPROTO;
                    die("a chunked response");
                }
            }
            if (head + length > capacity) {
                errno = EMSGSIZE;
                die("a response larger than the buffer");
            }
            while (*held < head + length) receive_more(fd, buffer, capacity, held);
            memmove(buffer, buffer + head + length, *held - head - length);
            *held -= head + length;
            return status;
        }
        if (*held == capacity) {
            errno = EMSGSIZE;
            die("a response head larger than the buffer");
        }
        receive_more(fd, buffer, capacity, held);
    }
}

static void *poster(void *argument) {
    int share = (int)(long)argument;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    enum { capacity = 65536 };
    char *buffer = malloc(capacity);
    char head[512];
    size_t held = 0;
    for (size_t index = (size_t)share; index < body_count; index += (size_t)connections) {
        int head_length = snprintf(
            head, sizeof head,
            "POST %s HTTP/1.1\r\nHost: %s:%d\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n\r\n", path,
            host, ntohs(address.sin_port), bodies[index].length);
        send_all(fd, head, (size_t)head_length);
        send_all(fd, bodies[index].data, bodies[index].length);
        int status = read_response(fd, buffer, capacity, &held);
        if (status != 200) {
            atomic_fetch_add(&failures, 1);
        } else if (sample_every > 0 && index % (size_t)sample_every == 0) {
            double at = now();
            pthread_mutex_lock(&output);
            printf("ack %zu %.9f\n", index, at);
            fflush(stdout);
            pthread_mutex_unlock(&output);
        }
    }
    free(buffer);
    close(fd);
    return NULL;
}

static void load(const char *file) {
    FILE *in = fopen(file, "rb");
    if (!in) die(file);
    size_t capacity = 1024;
    bodies = calloc(capacity, sizeof *bodies);
    size_t length;
    while (fscanf(in, "%zu\n", &length) == 1) {
        if (body_count == capacity) {
            capacity *= 2;
            bodies = realloc(bodies, capacity * sizeof *bodies);
        }
        char *data = malloc(length);
        if (fread(data, 1, length, in) != length) die("a truncated body file");
        bodies[body_count++] = (Body){data, length};
    }
    fclose(in);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: webhook_post HOST PORT PATH CONNECTIONS BODIES_FILE SAMPLE_EVERY\n");
        return 2;
    }
    host = argv[1];
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)atoi(argv[2]));
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        fprintf(stderr, "webhook_post: HOST must be an IPv4 address\n");
        return 2;
    }
    path = argv[3];
    connections = atoi(argv[4]);
    sample_every = atoi(argv[6]);
    if (connections < 1) return 2;
    load(argv[5]);
    pthread_t *threads = calloc((size_t)connections, sizeof *threads);
    printf("start %.9f\n", now());
    fflush(stdout);
    for (int i = 0; i < connections; i++) pthread_create(&threads[i], NULL, poster, (void *)(long)i);
    for (int i = 0; i < connections; i++) pthread_join(threads[i], NULL);
    printf("done %.9f %ld\n", now(), atomic_load(&failures));
    return 0;
}
