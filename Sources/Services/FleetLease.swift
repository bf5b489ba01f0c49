import GatewayFoundation
import Logging
import NotificationStore

/// Runs work once per fleet: only while this replica holds the work's lease (`FleetLeases`). Every replica runs
/// the same `run` for the same work; one gets the lease and works, the others ask again every `ttl / 3` and take
/// over within `ttl` of the holder going away (at once when it stops cleanly: it releases the lease).
///
/// A holder renews every `ttl / 3`. When it cannot prove it still holds the lease (a renewal refused: another
/// replica has it; or no renewal succeeds, the store being down or slow, within `ttl * 3 / 4` of the last one
/// that did), it cancels the work, well before the lease can expire and be granted to another replica, so two
/// replicas overlap only if this one is paused for longer than that margin. Each instant is taken before its
/// request is sent, and the lease's expiry is set by the store when the request arrives, so the store's lease
/// always outlasts what the holder counts on, whatever the offset between their clocks.
///
/// With leases nobody shares (`isShared` false: the SQLite or memory store, one replica) the work simply runs.
package struct FleetLease: Sendable {
    package let leases: any FleetLeases
    /// This replica's name in the leases (`FleetLeaseHolder.unique()`).
    package let holder: String
    /// How long a lease lasts unless renewed: the longest a crashed replica's work waits for another replica.
    package let ttl: Duration
    let logger: Logger

    package init(
        leases: any FleetLeases, holder: String = FleetLeaseHolder.unique(), ttl: Duration = .seconds(30),
        logger: Logger = Logger(label: "appstore-gateway.fleet")
    ) {
        self.leases = leases
        self.holder = holder
        self.ttl = ttl
        self.logger = logger
    }

    /// One replica (no shared store): every piece of work runs here.
    package static var soleReplica: FleetLease { FleetLease(leases: SoleReplicaLeases(), holder: "this replica") }

    /// How often a replica asks for a lease it does not hold, and how often a holder renews.
    var renewInterval: Duration { ttl / 3 }
    /// How long after its last proof a holder that cannot renew stops working.
    var stopAfter: Duration { ttl * 3 / 4 }

    /// Runs `work` whenever this replica holds the lease `name` (`label` in logs: a name may carry a URL's
    /// credentials), cancelling it when the lease is lost and starting it again when it is regained, until the
    /// task is cancelled or `work` returns on its own; then releases the lease.
    package func run(_ name: String, label: String? = nil, _ work: @escaping @Sendable () async -> Void) async {
        guard leases.isShared else {
            await work()
            return
        }
        let label = label ?? name
        var failures = 0
        while !Task.isCancelled {
            let asked = ContinuousClock.now
            switch await attempt(name, within: renewInterval) {
            case .held:
                failures = 0
            case .refused:
                failures = 0
                try? await Task.sleep(for: renewInterval)
                continue
            case .failed(let problem):
                failures += 1
                if failures == 1 {
                    logger.warning(
                        "cannot ask for a fleet lease", metadata: ["lease": "\(label)", "problem": "\(problem)"])
                }
                try? await Task.sleep(for: renewInterval)
                continue
            }
            logger.info("holding a fleet lease: working", metadata: ["lease": "\(label)", "holder": "\(holder)"])
            let ended = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await work()
                    return true
                }
                group.addTask {
                    await self.keep(name, label: label, provenAt: asked)
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                for await _ in group {}
                return first
            }
            if Task.isCancelled || ended {
                // A clean stop: another replica may take over now rather than after `ttl`. This task is cancelled,
                // so the release runs in a task of its own (bounded by the store's statement timeout).
                let (leases, holder) = (leases, holder)
                await Task.detached { try? await leases.release(name, holder: holder) }.value
                return
            }
            try? await Task.sleep(for: renewInterval)
        }
    }

    /// Renews the lease every `renewInterval` after the last proof; returns when the task is cancelled or the
    /// lease cannot be proven held any more (the caller then stops the work).
    private func keep(_ name: String, label: String, provenAt first: ContinuousClock.Instant) async {
        var proven = first
        while !Task.isCancelled {
            try? await Task.sleep(until: proven + renewInterval, clock: .continuous)
            var pause: Duration = .milliseconds(100)
            renewal: while !Task.isCancelled {
                let asked = ContinuousClock.now
                let deadline = proven + stopAfter
                guard asked < deadline else {
                    logger.warning(
                        "cannot renew a fleet lease: stopped working before it expires",
                        metadata: ["lease": "\(label)", "holder": "\(holder)"])
                    return
                }
                switch await attempt(name, within: deadline - asked) {
                case .held:
                    proven = asked
                    break renewal
                case .refused:
                    logger.warning(
                        "a fleet lease went to another replica: stopped working",
                        metadata: ["lease": "\(label)", "holder": "\(holder)"])
                    return
                case .failed(let problem):
                    logger.debug(
                        "cannot renew a fleet lease yet", metadata: ["lease": "\(label)", "problem": "\(problem)"])
                    try? await Task.sleep(for: min(pause, max(.zero, deadline - ContinuousClock.now)))
                    pause = min(pause * 2, renewInterval)
                }
            }
        }
    }

    private enum Answer: Sendable {
        case held
        case refused
        case failed(String)
    }

    /// One `hold`, answered within `limit` (a store that does not answer in time counts as a failure).
    private func attempt(_ name: String, within limit: Duration) async -> Answer {
        let (leases, holder, ttl) = (leases, holder, ttl)
        return await withTaskGroup(of: Answer?.self) { group in
            group.addTask {
                do throws(NotificationStoreFailure) {
                    return try await leases.hold(name, holder: holder, for: ttl) ? .held : .refused
                } catch {
                    return .failed(error.message)
                }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failed("no answer within \(limit)")
        }
    }
}
