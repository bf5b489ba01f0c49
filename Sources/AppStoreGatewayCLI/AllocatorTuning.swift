#if canImport(Glibc)
    import Glibc
#endif

/// glibc keeps up to 7 freed blocks of each small size in a per-thread cache (tcache) that `malloc` takes
/// them back from without a lock or a search. One pass of an event loop frees far more blocks of one size
/// at once: a batch of calls' streams and contexts, the big numbers of an ECDSA verification. The blocks past
/// the 7th go to glibc's shared bins, which every large allocation (a 5 KB JWS) then merges, so the next
/// pass takes them back the slow way. A cache of 64 per size holds a pass's blocks: measured on the 2-core
/// bench machine, a health Check costs ~5 % less CPU and a VerifyJWS ~1 µs less (bench/README.md).
///
/// glibc reads its tunables once, from `GLIBC_TUNABLES`, before `main`. So a gateway started without that
/// variable sets it and starts itself again, once (`execv` keeps the process id, arguments, descriptors and
/// the rest of the environment). An operator's own `GLIBC_TUNABLES`, even empty, is left exactly as it is.
enum AllocatorTuning {
    static let variable = "GLIBC_TUNABLES"
    static let tunables = "glibc.malloc.tcache_count=64"

    /// Restarts the process with `tunables` when `GLIBC_TUNABLES` is unset; returns only when it was set
    /// already, or when the restart could not happen (no `/proc`, a sandbox refusing `execv`), in which
    /// case the gateway runs with glibc's defaults, as it would have.
    static func restartTunedIfUnset() {
        #if canImport(Glibc)
            guard getenv(variable) == nil, setenv(variable, tunables, 1) == 0 else { return }
            execv("/proc/self/exe", CommandLine.unsafeArgv)
            unsetenv(variable)  // execv failed: nothing changed, and the variable must not claim otherwise
        #endif
    }
}
