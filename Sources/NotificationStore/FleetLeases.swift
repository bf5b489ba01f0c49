#if canImport(Glibc)
    import Glibc
#endif

/// Leases that make work run once per fleet rather than once per replica: a sink's deliveries, the subscription
/// timer, the projector, the reconciler. Each lease has a name (the work's) and at most one holder at a time;
/// a holder keeps it by renewing it before `ttl` runs out, and a lease not renewed in time is free for another
/// holder, so a crashed replica's work is taken over within `ttl`.
///
/// A lease only says who should work; it does not fence writes. The work it guards must stay correct when two
/// replicas briefly overlap (a holder that cannot renew stops before its `ttl` runs out, but a paused process
/// may not notice in time): the sinks are at least once, and the timer's and projector's commits are idempotent.
package protocol FleetLeases: Sendable {
    /// Acquires `name` for `holder`, or renews it when `holder` holds it, for `ttl` from now; true when `holder`
    /// holds it now (until `ttl` has passed, unless renewed), false when another holder's lease has not expired.
    func hold(_ name: String, holder: String, for ttl: Duration) async throws(NotificationStoreFailure) -> Bool
    /// Gives `name` up when `holder` holds it (a clean stop: another replica may take over at once instead of
    /// after `ttl`); nothing when it does not.
    func release(_ name: String, holder: String) async throws(NotificationStoreFailure)
    /// Whether other replicas share the leases. False: this process is the only replica, `hold` always grants,
    /// and callers may skip the renewals.
    var isShared: Bool { get }
}

/// The leases of a store one replica owns (the SQLite file, the memory stores): there is nobody to share the work
/// with, so every lease is granted to every caller at once.
package struct SoleReplicaLeases: FleetLeases {
    package init() {}

    package func hold(_ name: String, holder: String, for ttl: Duration) async throws(NotificationStoreFailure)
        -> Bool
    { true }

    package func release(_ name: String, holder: String) async throws(NotificationStoreFailure) {}

    package var isShared: Bool { false }
}

/// Names of lease holders.
package enum FleetLeaseHolder {
    /// A name for this process that no other replica has, now or later: the host name (which identifies a
    /// container or pod), the process id and 64 random bits (a restarted process may get the same id).
    package static func unique() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&name, name.count - 1) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        let random = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return "\(host)/\(getpid())/\(random)"
    }
}
