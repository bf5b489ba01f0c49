/// Weighted fair queueing of callers waiting for one rate bucket (one app, endpoint and environment).
///
/// Pure state: the I/O wrapper (the fair-share budget of the Apple client) enqueues a waiter per call
/// and, each time the bucket can grant a token, asks `next()` whom it goes to. Stride scheduling: each
/// caller has a virtual "pass"; the waiting caller with the lowest pass is served and its pass grows by
/// 1/weight, so over any stretch where callers keep waiting each gets tokens in proportion to its weight.
/// A caller that starts waiting joins at the current virtual time, so an idle caller neither banks credit
/// nor holds any share back: with one caller waiting it gets every token.
public struct FairShareQueue<Ticket: Hashable & Sendable>: Sendable {
    /// One call waiting for a token.
    public struct Waiter: Sendable, Hashable {
        /// The call's handle in the I/O wrapper.
        public var ticket: Ticket
        /// The caller's identity.
        public var caller: String
        /// When the call stops waiting (its `maxWait` ran out): it is then refused.
        public var deadline: MonotonicInstant
        /// When it started waiting.
        public var enqueued: MonotonicInstant
    }

    /// Most calls one caller may have waiting for this bucket; more are refused at once.
    public let maxWaitingPerCaller: Int
    private var queues: [String: [Waiter]] = [:]
    private var pass: [String: Double] = [:]
    private var virtualTime = 0.0
    private var order: [String] = []  // callers with waiters, by first arrival (ties of pass go to the earlier)

    public init(maxWaitingPerCaller: Int = 1024) {
        self.maxWaitingPerCaller = max(1, maxWaitingPerCaller)
    }

    /// Nobody is waiting.
    public var isEmpty: Bool { queues.isEmpty }

    /// Calls waiting, all callers together.
    public var count: Int { queues.values.reduce(0) { $0 + $1.count } }

    /// Calls `caller` has waiting.
    public func waiting(_ caller: String) -> Int { queues[caller]?.count ?? 0 }

    /// Queues a call of `caller` (weight ≥ 1). False when the caller already has `maxWaitingPerCaller` waiting.
    public mutating func enqueue(
        _ ticket: Ticket, caller: String, weight: Int, now: MonotonicInstant, deadline: MonotonicInstant
    ) -> Bool {
        var queue = queues[caller] ?? []
        guard queue.count < maxWaitingPerCaller else { return false }
        if queue.isEmpty {
            // Joining now: no credit from idle time, no debt beyond what was served before.
            pass[caller] = max(pass[caller] ?? virtualTime, virtualTime)
            order.append(caller)
        }
        queue.append(Waiter(ticket: ticket, caller: caller, deadline: deadline, enqueued: now))
        queues[caller] = queue
        weights[caller] = max(1, weight)
        return true
    }

    private var weights: [String: Int] = [:]

    /// Removes and returns every waiter whose deadline is at or before `now`.
    public mutating func removeExpired(now: MonotonicInstant) -> [Waiter] {
        var expired: [Waiter] = []
        for caller in order {
            guard let queue = queues[caller] else { continue }
            let (gone, kept) = (queue.filter { $0.deadline <= now }, queue.filter { $0.deadline > now })
            expired += gone
            if kept.isEmpty { leave(caller) } else { queues[caller] = kept }
        }
        return expired
    }

    /// Removes one waiter (its call went away); false when it was not waiting.
    public mutating func remove(_ ticket: Ticket) -> Bool {
        for caller in order {
            guard var queue = queues[caller], let index = queue.firstIndex(where: { $0.ticket == ticket }) else {
                continue
            }
            queue.remove(at: index)
            if queue.isEmpty { leave(caller) } else { queues[caller] = queue }
            return true
        }
        return false
    }

    /// The waiter the next token goes to (removed from the queue), or nil when nobody waits.
    public mutating func next() -> Waiter? {
        var best: String?
        for caller in order where queues[caller] != nil {
            if let current = best, (pass[caller] ?? 0) >= (pass[current] ?? 0) { continue }
            best = caller
        }
        guard let caller = best, var queue = queues[caller], !queue.isEmpty else { return nil }
        let waiter = queue.removeFirst()
        let callerPass = pass[caller] ?? virtualTime
        virtualTime = max(virtualTime, callerPass)
        pass[caller] = callerPass + 1.0 / Double(weights[caller] ?? 1)
        if queue.isEmpty { leave(caller) } else { queues[caller] = queue }
        return waiter
    }

    /// `caller` has nobody waiting any more; its pass is kept only while ahead of virtual time (it was served
    /// more than its share lately), so the state stays bounded by the callers that wait.
    private mutating func leave(_ caller: String) {
        queues[caller] = nil
        order.removeAll { $0 == caller }
        if let callerPass = pass[caller], callerPass <= virtualTime { pass[caller] = nil }
        if queues.isEmpty {
            // Everyone is served: nothing to be fair about until the next contention.
            pass.removeAll()
            weights.removeAll()
        }
    }
}
