// Linux APIs the Glibc module does not expose: epoll, eventfd, accept4, TCP options, signal masks, a thread-local.
#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H

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
#include <sys/auxv.h>
#include <sys/prctl.h>

// accept4 is a GNU extension; the Glibc module is built without _GNU_SOURCE.
int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
int pthread_setname_np(pthread_t thread, const char *name);

static inline int clinux_errno(void) { return errno; }

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

/// The calling thread's name (the process name, `comm`, for the main thread) into `name` (16 bytes).
static inline int clinux_get_process_name(char name[16]) { return prctl(PR_GET_NAME, name, 0, 0, 0); }

/// Sets the calling thread's name (the process name for the main thread); longer names are cut to 15 bytes.
static inline int clinux_set_process_name(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }

/// Whether the process runs in glibc's secure mode (setuid, setgid or file capabilities), where the loader
/// restricts environment variables such as GLIBC_TUNABLES.
static inline int clinux_secure_mode(void) { return getauxval(AT_SECURE) != 0; }

/// Whether the program was loaded through its ELF interpreter (the normal way): false when the loader was run
/// as the program (`ld-linux-x86-64.so.2 ./program`), whose /proc/self/exe is then the loader itself.
static inline int clinux_loaded_through_interpreter(void) { return getauxval(AT_BASE) != 0; }

/// The calling thread's own word of state for GatewayFoundation's `FastRandom` (zero until the thread first
/// draws): a thread-local, so threads drawing ids share no memory.
static inline uint64_t *clinux_thread_random_state(void) {
    static _Thread_local uint64_t state;
    return &state;
}

#endif
