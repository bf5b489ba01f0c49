internal import CCurl

#if canImport(Glibc)
    import Glibc
#endif

/// What every multi handle of one client shares (a libcurl share handle): resolved names and TLS sessions. A
/// loop's first connection to Apple then needs no lookup of its own and resumes a session another loop's
/// connection got (no certificate chain to verify again) instead of a full handshake. libcurl takes one lock
/// per kind of data while it reads or writes it (at connection set-up, never per request), from whichever
/// thread drives the handle; the locks are plain mutexes, which ThreadSanitizer understands.
///
/// Ownership: the share handle and its mutexes are freed when the last holder goes. Each multi handle and each
/// transfer holds this object, so it outlives every easy handle that points at it and every multi handle whose
/// connections may still write a session into it while they close.
final class CurlShare: @unchecked Sendable {
    let share: UnsafeMutableRawPointer
    private let mutexes: UnsafeMutablePointer<pthread_mutex_t>
    private static let lockCount = Int(CURL_LOCK_DATA_LAST.rawValue)

    /// Nil when libcurl cannot make or configure a share handle (then every handle goes on alone).
    init?() {
        guard curlGlobalInit == CURLE_OK, let share = curl_share_init() else { return nil }
        self.share = share
        mutexes = .allocate(capacity: Self.lockCount)
        for index in 0..<Self.lockCount { pthread_mutex_init(mutexes + index, nil) }
        let configured =
            ccurl_share_setopt_ptr(share, CURLSHOPT_USERDATA, UnsafeMutableRawPointer(mutexes)) == CURLSHE_OK
            && ccurl_share_setopt_lockfunction(share, curlShareLock) == CURLSHE_OK
            && ccurl_share_setopt_unlockfunction(share, curlShareUnlock) == CURLSHE_OK
            && ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_DNS.rawValue)) == CURLSHE_OK
            && ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue)) == CURLSHE_OK
        guard configured else { return nil }  // deinit frees what was made
    }

    deinit {
        _ = curl_share_cleanup(share)
        for index in 0..<Self.lockCount { pthread_mutex_destroy(mutexes + index) }
        mutexes.deallocate()
    }
}

private let curlShareLock: curl_lock_function = { _, data, _, user in
    guard let user, Int(data.rawValue) < Int(CURL_LOCK_DATA_LAST.rawValue) else { return }
    pthread_mutex_lock(user.assumingMemoryBound(to: pthread_mutex_t.self) + Int(data.rawValue))
}

private let curlShareUnlock: curl_unlock_function = { _, data, user in
    guard let user, Int(data.rawValue) < Int(CURL_LOCK_DATA_LAST.rawValue) else { return }
    pthread_mutex_unlock(user.assumingMemoryBound(to: pthread_mutex_t.self) + Int(data.rawValue))
}
