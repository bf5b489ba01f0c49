import AppStoreDomain
import Foundation
import GatewayFoundation
import Logging
import Metrics
import Redis

/// The rate budget shared by every replica, in Redis (`redis.url`): each Apple call's token is taken
/// from `<prefix>bucket:<bundle id>:<endpoint>:<environment>` by `SharedBucketScript`, and Apple's
/// 429 `Retry-After` is stored as `<prefix>block:…` so every replica holds that triple.
///
/// All Redis I/O happens on one dedicated thread that owns the `RedisConnection`; callers enqueue and
/// await. The thread takes every queued request at once, so callers waiting together share one round
/// trip: one EVALSHA per (app, endpoint, environment) leasing as many tokens as callers wait (at most
/// `SharedBucketScript.maxBatch`), all of them pipelined. When Redis fails or is slower than
/// `redis.timeout`, reservations go to a local bucket at `redis.fallbackShare` of the budget until a
/// periodic probe (`SharedBudgetMode`) finds Redis again; meanwhile callers take their local tokens on their
/// own threads, never waiting behind a probe. Each round trip (with the connect and script load it needs) has
/// one deadline, `redis.timeout` after it starts, however slowly Redis trickles its reply. The local bucket
/// opens once every shared slot reserved before the loss (at most `rateLimits.maxWait` ahead) has passed;
/// after that, calls are served at the share, so an outage costs a wait of about `maxWait`, never the rate.
package final class SharedRateBudget: RateBudget, @unchecked Sendable {
    private enum Work {
        case reserve(RateLimitKey, maxWait: Duration, CheckedContinuation<TokenBucket.Reservation, Never>)
        case block(RateLimitKey, delay: Duration)
        /// After a reserved wait: how long the key is still blocked (zero when not).
        case checkBlock(RateLimitKey, CheckedContinuation<Duration, Never>)
    }

    private let settings: SharedRateBudget.Settings
    private let limits: RateLimiter
    private let fallback: RateLimiter
    private let appNames: [String: String]
    private let clock: any GatewayClock
    private let logger: Logger
    private let metrics: SharedBudgetMetrics
    /// Where the CLIENT span of each reservation's round trip goes.
    private let tracer: any Tracer
    /// Guards `queue` and `stopping`; signalled when work arrives.
    private let condition = NSCondition()
    private var queue: [Work] = []
    private var stopping = false

    // Owned by the budget thread only.
    private var mode = SharedBudgetMode()
    private var connection: RedisConnection?
    /// The bucket script, run by its SHA-1.
    private static let script = RedisScript(SharedBucketScript.source)
    /// The budget's replies: a `take`'s integers (at most `SharedBucketScript.maxBatch`), a PTTL, the script's
    /// SHA-1 or an error. Its longest value written is the script's source; no reply string is longer.
    package static let replyLimits = RedisReplyLimits(
        largestValue: script.source.utf8.count, valueBytes: script.source.utf8.count,
        elements: SharedBucketScript.maxBatch, depth: 1)
    /// How far ahead of its request any replica's shared reservation can be scheduled: `rateLimits.maxWait`.
    private let reservationHorizon: Duration
    /// When the local buckets of the current fallback open: set by the budget thread when Redis is lost,
    /// read by every caller answered locally.
    private let localOpening = Lock(LocalOpening())

    /// A shared budget for the rates in `limits` (the configured, whole-app budgets), with the local
    /// `fallback` limiter already at `redis.fallbackShare`. `appNames` maps bundle ids to the app names
    /// used as metric labels; `reservationHorizon` is `rateLimits.maxWait`, the furthest ahead a shared slot
    /// is ever reserved. Reservations, modes and round trips count in `metrics`. The thread starts at once; the
    /// first reservation connects.
    package init(
        settings: SharedRateBudget.Settings, limits: RateLimiter, fallback: RateLimiter, appNames: [String: String],
        reservationHorizon: Duration, clock: any GatewayClock = SystemClock(),
        logger: Logger = Logger(label: "appstore-gateway.redis"),
        metrics: SharedBudgetMetrics = SharedBudgetMetrics(registry: MetricsRegistry()),
        tracer: any Tracer = SilentTracer()
    ) {
        self.tracer = tracer
        self.settings = settings
        self.limits = limits
        self.fallback = fallback
        self.reservationHorizon = max(.zero, reservationHorizon)
        self.appNames = appNames
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        if let url = settings.url {
            connection = RedisConnection(
                url: url, timeout: settings.timeout, limits: Self.replyLimits,
                tls: RedisTLSFiles(settings))
        }
        metrics.modeChanged(to: mode.state, transition: nil)
        Thread.start(named: "redis-budget") { [self] in run() }
    }

    /// Stops the thread after the queued work (for tests; the gateway's budget lives as long as the process).
    package func shutdown() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// A reserved slot in the future is waited for here, then the block key is checked again: a 429 seen
    /// by any replica during the wait holds this call too (the token is given up). The caller gets
    /// `.goNow`, or `.refused` with the block's remaining time.
    package func reserve(key: RateLimitKey, now: MonotonicInstant, maxWait: Duration) async -> TokenBucket.Reservation {
        var span = tracer.childSpan(of: TraceContext.current, name: "redis budget reserve", kind: .client)
        let reservation = await withCheckedContinuation { continuation in
            enqueue(.reserve(key, maxWait: max(.zero, maxWait), continuation))
        }
        if span != nil {
            span?.set("db.system.name", "redis")
            span?.set("db.operation.name", "EVALSHA")
            if let url = settings.url { span?.set("server.address", url.host) }
            span?.set("appstore.app", appNames[key.bundleID] ?? key.bundleID)
            span?.set("appstore.endpoint", key.endpoint.configName)
            span?.set("appstore.budget.reservation", SharedRateBudget.describe(reservation))
            tracer.end(span)
        }
        guard case .goAfter(let wait) = reservation else { return reservation }
        do {
            try await Task.sleep(for: wait)
        } catch {
            return reservation  // cancelled: the caller's own sleep ends the call as cancelled
        }
        let blocked = await withCheckedContinuation { continuation in enqueue(.checkBlock(key, continuation)) }
        return blocked > .zero ? .refused(retryAfter: blocked) : .goNow
    }

    /// A reservation as a span attribute: go_now, go_after or refused.
    static func describe(_ reservation: TokenBucket.Reservation) -> String {
        switch reservation {
        case .goNow: "go_now"
        case .goAfter: "go_after"
        case .refused: "refused"
        }
    }

    package func block(key: RateLimitKey, for delay: Duration, now: MonotonicInstant) async {
        // Held locally at once (the fallback bucket answers if Redis is down), shared by the thread.
        fallback.block(key: key, for: delay, now: now)
        enqueue(.block(key, delay: delay))
    }

    /// The current mode (for tests and the log).
    package var currentMode: SharedBudgetMode.State {
        condition.lock()
        defer { condition.unlock() }
        return modeSnapshot
    }
    private var modeSnapshot: SharedBudgetMode.State = .shared

    private func enqueue(_ work: Work) {
        condition.lock()
        // After `shutdown`, or while on the fallback (until a probe answers), nothing waits for the budget
        // thread, which may be busy probing a slow Redis: the local buckets answer on the caller's thread.
        if stopping || modeSnapshot != .shared {
            condition.unlock()
            answerLocally([work])
            return
        }
        queue.append(work)
        condition.signal()
        condition.unlock()
    }

    // MARK: The budget thread

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopping && !mode.probeDue(now: clock.monotonicNow()) {
                if let next = mode.nextProbe {
                    let wait = next - clock.monotonicNow()
                    let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
                    _ = condition.wait(until: Date(timeIntervalSinceNow: max(0.001, seconds)))
                } else {
                    condition.wait()
                }
            }
            let batch = queue
            queue.removeAll(keepingCapacity: true)
            let stop = stopping
            condition.unlock()

            if mode.probeDue(now: clock.monotonicNow()) { probe() }
            if !batch.isEmpty {
                if mode.route == .redis, connection != nil {
                    serveFromRedis(batch)
                } else {
                    answerLocally(batch)
                }
            }
            if stop {
                connection?.close()
                return
            }
        }
    }

    /// Reconnects and reloads the script, both within one `redis.timeout`; back on the shared budget if both
    /// succeed.
    private func probe() {
        mode.probeStarted()
        publish(nil)
        do {
            try ensureReady(forceReconnect: true, before: connection?.deadline())
            publish(mode.redisAnswered())
        } catch {
            redisFailed(error)
        }
    }

    private func ensureReady(forceReconnect: Bool = false, before deadline: RedisDeadline?)
        throws(RedisConnectionFailure)
    {
        guard let connection else { throw RedisConnectionFailure(kind: .connect, message: "no redis.url") }
        if forceReconnect || !connection.isConnected {
            let start = clock.monotonicNow()
            do {
                try connection.connect(before: deadline)
                try connection.load(Self.script, before: deadline)  // once per connection: calls need not meet NOSCRIPT
            } catch {
                roundTrip(since: start, failure: error.kind)
                throw error
            }
            roundTrip(since: start, failure: nil)
        }
    }

    /// One pipeline: every block, then one `take` per key (each up to `maxBatch` reservations), with any
    /// reconnect it needs, all within one `redis.timeout`.
    private func serveFromRedis(_ batch: [Work]) {
        var blocks: [(RateLimitKey, Duration)] = []
        var checks: [(RateLimitKey, CheckedContinuation<Duration, Never>)] = []
        var groups: [(key: RateLimitKey, items: [(Duration, CheckedContinuation<TokenBucket.Reservation, Never>)])] = []
        var groupIndex: [RateLimitKey: Int] = [:]
        for work in batch {
            switch work {
            case .block(let key, let delay):
                blocks.append((key, delay))
            case .checkBlock(let key, let continuation):
                checks.append((key, continuation))
            case .reserve(let key, let maxWait, let continuation):
                if let index = groupIndex[key], groups[index].items.count < SharedBucketScript.maxBatch {
                    groups[index].items.append((maxWait, continuation))
                } else {
                    groupIndex[key] = groups.count
                    groups.append((key: key, items: [(maxWait, continuation)]))
                }
            }
        }
        do throws(RedisConnectionFailure) {
            let deadline = connection?.deadline()
            try ensureReady(before: deadline)
            let prefix = settings.keyPrefix
            var arguments: [[String]] = blocks.map {
                SharedBucketScript.blockArguments(key: $0.0, delay: $0.1, prefix: prefix)
            }
            arguments += groups.map {
                SharedBucketScript.takeArguments(
                    key: $0.key, rate: limits.rate(for: $0.key), maxWaits: $0.items.map(\.0), prefix: prefix)
            }
            let replies = try evaluate(
                arguments, plain: checks.map { ["PTTL", SharedBucketScript.blockKey($0.0, prefix: prefix)] },
                before: deadline)
            // Every reply is decoded before any caller is resumed, so a bad reply leaves all of them to the
            // local fallback below and none is resumed twice.
            var blockedFor: [Duration] = []
            for reply in replies.suffix(checks.count) {
                guard case .integer(let milliseconds) = reply else {
                    throw RedisConnectionFailure(kind: .protocolError, message: "unexpected PTTL reply: \(reply)")
                }
                blockedFor.append(.milliseconds(min(max(0, milliseconds), 3_600_000)))
            }
            var decoded: [[TokenBucket.Reservation]] = []
            for (group, reply) in zip(groups, replies.dropFirst(blocks.count).prefix(groups.count)) {
                guard let values = reply.integers,
                    let reservations = SharedBucketScript.reservations(
                        fromTakeReply: values, requested: group.items.count)
                else {
                    throw RedisConnectionFailure(kind: .protocolError, message: "unexpected script reply: \(reply)")
                }
                decoded.append(reservations)
            }
            guard replies.count == blocks.count + groups.count + checks.count, decoded.count == groups.count else {
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis answered fewer replies than sent")
            }
            for (check, blocked) in zip(checks, blockedFor) { check.1.resume(returning: blocked) }
            for (group, reservations) in zip(groups, decoded) {
                let app = appNames[group.key.bundleID] ?? group.key.bundleID
                for ((_, continuation), reservation) in zip(group.items, reservations) {
                    let outcome: SharedBudgetOutcome =
                        switch reservation {
                        case .goNow: .taken
                        case .goAfter: .waited
                        case .refused: .refused
                        }
                    metrics.reservation(app: app, endpoint: group.key.endpoint.configName, outcome: outcome)
                    continuation.resume(returning: reservation)
                }
            }
            publish(mode.redisAnswered())
        } catch {
            redisFailed(error)
            answerLocally(batch)  // nobody was resumed above: everything goes to the local buckets
        }
    }

    /// The bucket script for each argument list, then `plain`, in one pipeline (the script loaded again if
    /// Redis lost it), before `deadline`.
    private func evaluate(_ arguments: [[String]], plain: [[String]], before deadline: RedisDeadline?)
        throws(RedisConnectionFailure) -> [RedisReply]
    {
        guard let connection, !arguments.isEmpty || !plain.isEmpty else { return [] }
        let start = clock.monotonicNow()
        let replies: [RedisReply]
        do {
            replies = try connection.pipeline(
                arguments.map(Self.script.call) + plain, loading: Self.script, before: deadline)
        } catch {
            roundTrip(since: start, failure: error.kind)
            throw error
        }
        for case .error(let message) in replies {
            roundTrip(since: start, failure: .redisError)
            throw RedisConnectionFailure(kind: .redisError, message: message)
        }
        roundTrip(since: start, failure: nil)
        return replies
    }

    /// Answers from the local fallback buckets, on the budget thread or on a caller's.
    private func answerLocally(_ batch: [Work]) {
        for work in batch {
            switch work {
            case .block:
                continue  // already applied to the fallback bucket by `block`
            case .checkBlock(_, let continuation):
                continuation.resume(returning: .zero)  // local blocks are in the fallback bucket already
            case .reserve(let key, let maxWait, let continuation):
                primeLocalBucket(key)
                let app = appNames[key.bundleID] ?? key.bundleID
                metrics.reservation(app: app, endpoint: key.endpoint.configName, outcome: .fallback)
                continuation.resume(returning: fallback.reserve(key: key, now: clock.monotonicNow(), maxWait: maxWait))
            }
        }
    }

    private func redisFailed(_ failure: RedisConnectionFailure) {
        connection?.close()
        let transition = mode.redisFailed(now: clock.monotonicNow())
        if transition == .fellBack {
            // Until Redis was lost, any replica may have reserved shared slots up to `reservationHorizon`
            // ahead, and those calls still go to Apple: local tokens start only after the last of them.
            // Set before `publish` lets callers answer themselves locally.
            let opensAt = clock.monotonicNow() + reservationHorizon
            localOpening.withLock { $0 = LocalOpening(opensAt: opensAt) }
            logger.warning(
                "Redis unreachable; spending this replica's fallback share of the rate budget",
                metadata: [
                    "redis": "\(settings.url.map { "\($0)" } ?? "-")", "problem": "\(failure.message)",
                    "fallback_share": "\(settings.fallbackShare)",
                ])
        }
        publish(transition)
    }

    /// On a key's first local reservation of a fallback, empties its local bucket until one fallback
    /// interval after `opensAt`: the slots the shared schedule promised are spent first, then this
    /// replica's share starts from an empty bucket, so no second sees the shared rate and the shares at once.
    /// Under the lock, so that no caller of the same key takes a local token before the bucket is emptied.
    private func primeLocalBucket(_ key: RateLimitKey) {
        localOpening.withLock { opening in
            guard let opensAt = opening.opensAt, opening.primedKeys.insert(key).inserted else { return }
            let interval = TokenBucket.emissionInterval(perSecond: fallback.rate(for: key).perSecond)
            fallback.blockUntil(opensAt + .nanoseconds(interval), key: key, now: clock.monotonicNow())
        }
    }

    private func publish(_ transition: SharedBudgetMode.Transition?) {
        if transition == .restored {
            logger.notice(
                "Redis answers again; back on the shared rate budget",
                metadata: [
                    "redis": "\(settings.url.map { "\($0)" } ?? "-")"
                ])
        }
        condition.lock()
        let changed = modeSnapshot != mode.state
        modeSnapshot = mode.state
        condition.unlock()
        if changed || transition != nil { metrics.modeChanged(to: mode.state, transition: transition) }
    }

    private func roundTrip(since start: MonotonicInstant, failure: RedisFailureKind?) {
        let elapsed = clock.monotonicNow() - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.roundTrip(seconds: seconds, failure: failure)
    }
}

/// When the local buckets of one fallback open, and which were emptied until then.
private struct LocalOpening {
    /// The instant after which no slot the shared schedule promised before Redis was lost can still be
    /// spent, so local tokens may start there without any second seeing both; nil before the first fallback.
    var opensAt: MonotonicInstant?
    /// The keys whose local bucket was emptied up to `opensAt` in this fallback (bounded by the configured
    /// apps × endpoints × environments).
    var primedKeys: Set<RateLimitKey> = []
}
