internal import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// glibc keeps up to 7 freed blocks of each small size in a per-thread cache (tcache) that `malloc` takes
/// them back from without a lock or a search. One pass of an event loop frees far more blocks of one size
/// at once: a batch of calls' streams and contexts (at 64 connections × 32 streams, two thousand calls'
/// worth), the big numbers of an ECDSA verification. The blocks past the 7th go to glibc's shared bins, which
/// every large allocation (a 5 KB JWS) then merges, so the next pass takes them back the slow way. A cache of
/// 4,096 per size holds a pass's blocks: measured on the 2-core bench machine, a health Check costs ~5 % less
/// CPU at 4 connections and 20–25 % less at 64 and 256 (against a cache of 64; bench/README.md), a VerifyJWS
/// ~1 µs less. The cache only ever holds blocks the thread had in use at once in one pass (freed, then taken
/// again by the next), so it does not raise peak memory: the same blocks would sit in the bins otherwise.
///
/// The same variable fixes where glibc maps large blocks and when it gives free memory back. By default a
/// block of 128 KiB or more is mapped on its own, and a heap whose free top passes 128 KiB is cut back: a
/// GetHistory answer (Apple's ~100 KB page, the ~115 KB answer and its bytes on their way out) freed that way
/// made every next call fault its pages in again, 20–40 page faults a call (`madvise` on the loop thread).
/// glibc raises both limits by itself after the first large mapped block is freed, up to twice that block;
/// the gateway starts where a full 4 MiB answer (`history.maxResponseBytes`) would take it: blocks below
/// 4 MiB come from the heap and a heap keeps up to 8 MiB of free top before it is cut back.
///
/// glibc reads its tunables once, from `GLIBC_TUNABLES`, before `main`. So a gateway started without that
/// variable sets it and executes itself again, once: `execv` keeps the process id, arguments, descriptors and
/// the rest of the environment, and the process name (which executing `/proc/self/exe` would turn into
/// `exe`) is set back. It is skipped, and the gateway runs with glibc's defaults, when the operator set
/// `GLIBC_TUNABLES` (even empty: left exactly as chosen), in glibc's secure mode (setuid or file capabilities,
/// where the loader restricts the variable), when the loader itself was run as the program, and when the
/// restart fails.
enum AllocatorTuning {
    static let variable = "GLIBC_TUNABLES"
    static let tunables =
        "glibc.malloc.tcache_count=4096:glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=8388608"
    /// Set for the restarted process only, holding the process name to restore; its presence also means
    /// "restarted already", so the gateway never restarts twice whatever the loader does with the tunables.
    static let restartedMarker = "APPSTORE_GATEWAY_RESTARTED_AS"

    /// Restarts the process with `tunables` when `GLIBC_TUNABLES` is unset; returns when no restart is due,
    /// when this process is the restarted one (after setting its name back), or when the restart failed.
    static func restartTunedIfUnset() {
        #if canImport(Glibc)
            if let name = getenv(restartedMarker) {
                _ = clinux_set_process_name(name)
                unsetenv(restartedMarker)
                return
            }
            guard getenv(variable) == nil, clinux_secure_mode() == 0, clinux_loaded_through_interpreter() != 0
            else { return }
            var name = [CChar](repeating: 0, count: 16)
            guard clinux_get_process_name(&name) == 0, setenv(restartedMarker, name, 1) == 0 else { return }
            guard setenv(variable, tunables, 1) == 0 else {
                unsetenv(restartedMarker)
                return
            }
            execv("/proc/self/exe", CommandLine.unsafeArgv)
            // execv failed: nothing changed, and neither variable may claim otherwise.
            unsetenv(variable)
            unsetenv(restartedMarker)
        #endif
    }
}
