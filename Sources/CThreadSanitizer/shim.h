// ThreadSanitizer's happens-before hooks, for `Lock` (GatewayFoundation) in debug builds.
//
// The hooks are weak: they are defined only when the ThreadSanitizer runtime is linked in
// (`swift build --sanitize=thread`, `make test-tsan`), and every other build calls nothing. No flag is needed
// to turn them on: the Clang importer does not see `--sanitize=thread`, so `__has_feature(thread_sanitizer)`
// cannot tell from here.
#ifndef GATEWAY_THREAD_SANITIZER_SHIM_H
#define GATEWAY_THREAD_SANITIZER_SHIM_H

void __tsan_acquire(void *address) __attribute__((weak));
void __tsan_release(void *address) __attribute__((weak));

/// Tells ThreadSanitizer that the calling thread acquired the synchronization object at `address`.
static inline void gateway_tsan_acquire(void *address) {
    if (__tsan_acquire) __tsan_acquire(address);
}

/// Tells ThreadSanitizer that the calling thread releases the synchronization object at `address`.
static inline void gateway_tsan_release(void *address) {
    if (__tsan_release) __tsan_release(address);
}

#endif
