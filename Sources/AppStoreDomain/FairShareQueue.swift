import GatewayFoundation

/// Weighted fair queueing of callers waiting for one rate bucket (one app, endpoint and environment).
///
/// Pure state: `FairShareGate` enqueues a waiter per call and, each time the bucket has a token, asks `next()`
/// whom it goes to. Stride scheduling: each caller has a virtual "pass"; the waiting caller with the lowest pass
/// is served and its pass grows by 1/weight, so over any stretch where callers keep waiting each gets tokens in
/// proportion to its weight. A caller that starts waiting joins at the current virtual time (the pass of the
/// last caller served), so an idle caller neither banks credit nor holds any share back: with one caller
/// waiting it gets every token. A caller that joins there from behind (it had less than its share) goes before
/// the callers at that same pass, which were served up to it: so a caller that stays below its share gets the
/// very next token after it starts waiting, however many callers keep calls waiting.
package struct FairShareQueue<Ticket: Hashable & Sendable>: Sendable {
    /// One call waiting for a token.
    package struct Waiter: Sendable, Hashable {
        /// The call's handle in the I/O wrapper.
        package var ticket: Ticket
        /// The caller's identity.
        package var caller: String
        /// When the call stops waiting (its `maxWait` runs out): it is refused if no token came by then.
        package var deadline: MonotonicInstant
        /// When it started waiting.
        package var enqueued: MonotonicInstant
    }

    /// Most calls one caller may have waiting for this bucket; more are refused at once.
    package let maxWaitingPerCaller: Int
    private var queues: [String: [Waiter]] = [:]
    private var standings: [String: CallerStanding] = [:]
    private var virtualTime = 0.0
    private var sequence: UInt64 = 0
    /// The callers with waiters, in the order they started waiting.
    private var order: [String] = []
    /// Calls waiting, all callers together.
    package private(set) var count = 0

    /// An empty queue; each caller may have `maxWaitingPerCaller` calls waiting.
    package init(maxWaitingPerCaller: Int = 1024) {
        self.maxWaitingPerCaller = max(1, maxWaitingPerCaller)
    }

    /// Nobody is waiting.
    package var isEmpty: Bool { count == 0 }

    /// Calls `caller` has waiting.
    package func waiting(_ caller: String) -> Int { queues[caller]?.count ?? 0 }

    /// Queues a call of `caller` (weight ≥ 1). False when the caller already has `maxWaitingPerCaller` waiting.
    package mutating func enqueue(
        _ ticket: Ticket, caller: String, weight: Int, now: MonotonicInstant, deadline: MonotonicInstant
    ) -> Bool {
        let waiter = Waiter(ticket: ticket, caller: caller, deadline: deadline, enqueued: now)
        if queues[caller] == nil {
            // Joining now: no credit from idle time, no debt beyond what was served before. A caller still at
            // or ahead of virtual time keeps its standing: it was served up to there, and leaving between two
            // calls does not move it ahead of the callers that kept waiting.
            if let standing = standings[caller], standing.pass >= virtualTime {
                standings[caller]?.weight = max(1, weight)
            } else {
                sequence &+= 1
                standings[caller] = CallerStanding(
                    pass: virtualTime, weight: max(1, weight), joinedBelowShare: true, sequence: sequence)
            }
            order.append(caller)
            queues[caller] = [waiter]
        } else {
            guard queues[caller]!.count < maxWaitingPerCaller else { return false }
            queues[caller]!.append(waiter)
            standings[caller]?.weight = max(1, weight)
        }
        count += 1
        return true
    }

    /// Removes and returns every waiter whose deadline is before `instant` (no token can reach them in time).
    package mutating func removeWaiters(deadlineBefore instant: MonotonicInstant) -> [Waiter] {
        var removed: [Waiter] = []
        var index = 0
        while index < order.count {
            let caller = order[index]
            if queues[caller]!.contains(where: { $0.deadline < instant }) {
                removed += queues[caller]!.filter { $0.deadline < instant }
                queues[caller]!.removeAll { $0.deadline < instant }
                if queues[caller]!.isEmpty {
                    leave(caller, at: index)
                    continue
                }
            }
            index += 1
        }
        count -= removed.count
        return removed
    }

    /// Removes one waiter (its call went away); false when it was not waiting.
    package mutating func remove(_ ticket: Ticket) -> Bool {
        for (index, caller) in order.enumerated() {
            guard let position = queues[caller]!.firstIndex(where: { $0.ticket == ticket }) else { continue }
            queues[caller]!.remove(at: position)
            count -= 1
            if queues[caller]!.isEmpty { leave(caller, at: index) }
            return true
        }
        return false
    }

    /// The waiter the next token goes to (removed from the queue), or nil when nobody waits.
    package mutating func next() -> Waiter? {
        var best: (index: Int, standing: CallerStanding)?
        for (index, caller) in order.enumerated() {
            guard let standing = standings[caller] else { continue }
            if let current = best?.standing, !Self.precedes(standing, current) { continue }
            best = (index, standing)
        }
        guard let (index, standing) = best else { return nil }
        let caller = order[index]
        let waiter = queues[caller]!.removeFirst()
        count -= 1
        virtualTime = max(virtualTime, standing.pass)
        sequence &+= 1
        standings[caller] = CallerStanding(
            pass: standing.pass + 1.0 / Double(standing.weight), weight: standing.weight, joinedBelowShare: false,
            sequence: sequence)
        if queues[caller]!.isEmpty { leave(caller, at: index) }
        return waiter
    }

    /// `caller` (weight ≥ 1) took a token without waiting (nobody was): it counts toward its share as one handed
    /// out by `next` does, so a caller that takes free tokens does not come to the next contention as if idle.
    package mutating func charge(_ caller: String, weight: Int) {
        let pass = standings[caller].map { max($0.pass, virtualTime) } ?? virtualTime
        virtualTime = pass
        sequence &+= 1
        standings[caller] = CallerStanding(
            pass: pass + 1.0 / Double(max(1, weight)), weight: max(1, weight), joinedBelowShare: false,
            sequence: sequence)
    }

    /// Whether `a` goes before `b`: the lower pass, then a caller that joined below its share, then the one
    /// that reached the pass first.
    private static func precedes(_ a: CallerStanding, _ b: CallerStanding) -> Bool {
        if a.pass != b.pass { return a.pass < b.pass }
        if a.joinedBelowShare != b.joinedBelowShare { return a.joinedBelowShare }
        return a.sequence < b.sequence
    }

    /// `caller` (at `index` in `order`) has nobody waiting any more; its standing is kept only while its pass is
    /// not behind virtual time (it was served its share or more lately), so the state stays bounded by the
    /// callers that wait or were served lately (at most the configured callers). The others' standings are kept
    /// when nobody waits, even for a moment: who was served lately still counts at the next contention.
    private mutating func leave(_ caller: String, at index: Int) {
        queues[caller] = nil
        order.remove(at: index)
        if let standing = standings[caller], standing.pass < virtualTime { standings[caller] = nil }
    }
}

/// Where a caller stands in a `FairShareQueue`: its pass, and how ties of pass are broken. Not nested in the
/// generic queue, so the dictionary of standings is a concrete type wherever the queue's code runs unspecialized
/// (a charge on the uncontended path costs a lookup, not generic dictionary code).
private struct CallerStanding {
    var pass: Double
    var weight: Int
    /// It joined at the virtual time and has not been served since: first among equal passes.
    var joinedBelowShare: Bool
    /// When it reached this pass (a running count): among equal passes the earlier goes first.
    var sequence: UInt64
}
