// Linux APIs the Glibc module does not expose: epoll, eventfd, accept4, TCP options, signal masks, a thread-local.
#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <pthread.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>

// accept4 is a GNU extension; the Glibc module is built without _GNU_SOURCE.
int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
int pthread_setname_np(pthread_t thread, const char *name);

static inline int clinux_errno(void) { return errno; }

/// Sets RLIMIT_CORE to 0, soft and hard (for good: an unprivileged process cannot raise it again), and marks the
/// process not dumpable (PR_SET_DUMPABLE 0: a core_pattern that pipes to a collector, which ignores RLIMIT_CORE,
/// gets no core either, and processes of the same user cannot ptrace it or read its memory), so a crash writes
/// no core file holding the keys in memory. 0 on success, else -1 with errno.
static inline int clinux_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/// Blocks SIGTERM, SIGINT and SIGPIPE in the calling thread (threads created later inherit the mask), so
/// only the thread that calls `clinux_wait_shutdown_signal` sees the shutdown signals.
static inline int clinux_block_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGPIPE);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/// Waits for SIGTERM or SIGINT and returns its number.
static inline int clinux_wait_shutdown_signal(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {}
    return sig;
}

/// The calling thread's own word of state for GatewayFoundation's `FastRandom` (zero until the thread first
/// draws): a thread-local, so threads drawing ids share no memory.
static inline uint64_t *clinux_thread_random_state(void) {
    static _Thread_local uint64_t state;
    return &state;
}

/// The calling thread's place in the order in which threads first asked (0, 1, 2, …), for GatewayFoundation's
/// `ThreadIndex`: a thread-local after the first call, so reading it touches no shared memory.
static inline uint32_t clinux_thread_index(void) {
    static _Thread_local uint32_t index;  /* 0 until given; then the place + 1 */
    static _Atomic uint32_t given;
    if (index == 0) index = atomic_fetch_add_explicit(&given, 1, memory_order_relaxed) + 1;
    return index - 1;
}

#endif
