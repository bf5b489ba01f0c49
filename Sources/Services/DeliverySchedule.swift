/// When each event of an outbound sink is sent, pure: no I/O, the time is a parameter (UNIX ms). The sink
/// (`EventSink`) feeds it the events it reads from its log, in position order, asks it what to send now, and
/// tells it how each attempt ended; the schedule says what is settled, what is retried when, what is given up,
/// and how far the sink's low watermark may move (docs/subscription-events.md).
///
/// - **Order per lane**: events of one lane (a subscription: app, environment, original transaction id; the
///   relay has one lane) are sent one at a time, in position order: the next is sent only once the one before
///   it was acknowledged or dead-lettered. Other lanes are not held up.
/// - **Retries**: a failed attempt is retried `firstRetry` later (at most 1 s), then twice as long each time,
///   up to `maxBackoff`. The retry that would fall after `maxAge` from the first attempt is moved to that
///   instant; an attempt that fails `maxAge` or more after the first one gives the event up (a dead letter).
/// - **Bounds**: at most `maxInFlight` attempts at once; at most `maxWindow` events between the low watermark
///   and the newest event read (a lane stuck on one event holds at most that many later ones in memory; the
///   sink reads no further until the oldest settles).
/// - **Watermark**: every position at or below it is settled (or was not for this sink). Events acknowledged
///   above it (out of order) are reported so the sink can keep them, and are not sent again after a restart.
package struct DeliverySchedule<Item: Sendable>: Sendable {
    /// The schedule's constants.
    package struct Policy: Sendable, Hashable {
        /// The first retry's delay (capped at `maxBackoff`). Default 1 s.
        package var firstRetry: Int64 = 1_000
        /// The longest delay between two attempts (ms).
        package var maxBackoff: Int64
        /// How long after its first attempt an event still failing is given up (ms).
        package var maxAge: Int64
        /// Attempts under way at once at most. Default 64.
        package var maxInFlight = 64
        /// Events read and not yet below the watermark, at most. Default 4096.
        package var maxWindow = 4096

        package init(maxBackoff: Int64, maxAge: Int64) {
            self.maxBackoff = max(1, maxBackoff)
            self.maxAge = max(0, maxAge)
        }

        /// The delay before the retry that follows the `failures`-th failed attempt (1: the first retry).
        package func backoff(afterFailures failures: Int) -> Int64 {
            var delay = min(firstRetry, maxBackoff)
            var step = 1
            while step < failures, delay < maxBackoff {
                delay = min(delay &* 2, maxBackoff)
                step += 1
            }
            return delay
        }
    }

    /// An attempt to make now.
    package struct Dispatch: Sendable {
        package var position: Int64
        package var item: Item
        /// 1 for the first attempt.
        package var attempt: Int
    }

    /// What a failed attempt leads to.
    package enum Verdict: Sendable, Hashable {
        /// Tried again at this instant.
        case retry(at: Int64)
        /// Given up: the event is settled as a dead letter.
        case deadLetter(DeadLetter)
    }

    /// An event given up on.
    package struct DeadLetter: Sendable, Hashable {
        package var position: Int64
        package var attempts: Int
        package var firstAttemptAt: Int64
        package var deadAt: Int64
        package var lastError: String

        package init(position: Int64, attempts: Int, firstAttemptAt: Int64, deadAt: Int64, lastError: String) {
            self.position = position
            self.attempts = attempts
            self.firstAttemptAt = firstAttemptAt
            self.deadAt = deadAt
            self.lastError = lastError
        }
    }

    /// What was settled since the last `takeProgress()`: what the sink records.
    package struct Progress: Sendable, Hashable {
        package var through: Int64
        /// Positions above `through` settled since the last take (acknowledged or dead-lettered).
        package var settled: [Int64]
        package var isEmpty: Bool { settled.isEmpty }
    }

    private struct Entry {
        var lane: String
        var item: Item
        var attempts = 0
        var firstAttemptAt: Int64?
        var inFlight = false
    }

    package let policy: Policy
    /// Every position at or below it is settled.
    package private(set) var watermark: Int64
    /// The newest position read (every position from the watermark to it was offered or skipped).
    package private(set) var readThrough: Int64
    /// Unsettled events by position.
    private var entries: [Int64: Entry] = [:]
    /// Positions read above the watermark that were for this sink (settled ones too, until the watermark passes
    /// them), in order: the window.
    private var window: [Int64] = []
    private var windowStart = 0
    /// Settled positions above the watermark (from the store at start, and since).
    private var settledAbove: Set<Int64>
    /// Settled since the last `takeProgress`.
    private var newlySettled: [Int64] = []
    private var watermarkReported: Int64
    /// Each lane's unsettled events, in position order; the first is the lane's head, the only one ever sent.
    private var lanes: [String: [Int64]] = [:]
    /// Heads waiting to be sent (not in flight), by when they are due: a binary min-heap of (due, position).
    private var due: [(at: Int64, position: Int64)] = []
    package private(set) var inFlight = 0

    /// A schedule resuming from a sink's stored progress: `watermark`, and `settled`, the positions above it
    /// already acknowledged (they are skipped when offered again).
    package init(policy: Policy, watermark: Int64, settled: Set<Int64> = []) {
        self.policy = policy
        self.watermark = watermark
        self.watermarkReported = watermark
        self.readThrough = watermark
        self.settledAbove = settled.filter { $0 > watermark }
    }

    /// Events that may still be offered before the window is full.
    package var room: Int { max(0, policy.maxWindow - (window.count - windowStart)) }

    /// Whether nothing is read and unsettled.
    package var isIdle: Bool { entries.isEmpty }

    /// Offers the next event read from the log (positions must grow), of `lane`. One already settled (acknowledged
    /// before a restart) is skipped.
    package mutating func offer(position: Int64, lane: String, item: Item) {
        precondition(position > readThrough, "events are offered in position order, once")
        readThrough = position
        if settledAbove.contains(position) {
            window.append(position)
            advanceWatermark()
            return
        }
        entries[position] = Entry(lane: lane, item: item)
        window.append(position)
        lanes[lane, default: []].append(position)
        if lanes[lane]?.count == 1 { push(at: Int64.min, position: position) }
    }

    /// The log was read up to `position` and nothing more there is for this sink.
    package mutating func skip(through position: Int64) {
        guard position > readThrough else { return }
        readThrough = position
        advanceWatermark()
    }

    /// The attempts to start at `now`: due lane heads, oldest due first, within `maxInFlight`. Each is marked in
    /// flight until `acknowledged` or `failed` is told.
    package mutating func ready(now: Int64) -> [Dispatch] {
        var out: [Dispatch] = []
        while inFlight < policy.maxInFlight, let top = due.first, top.at <= now {
            popDue()
            guard var entry = entries[top.position], !entry.inFlight else { continue }
            entry.inFlight = true
            entry.attempts += 1
            if entry.firstAttemptAt == nil { entry.firstAttemptAt = now }
            entries[top.position] = entry
            inFlight += 1
            out.append(Dispatch(position: top.position, item: entry.item, attempt: entry.attempts))
        }
        return out
    }

    /// When the next waiting head is due: nil when none is waiting, or when `maxInFlight` attempts are under way
    /// (none can start before one of them ends, which wakes the sink anyway). A head offered at once is due at
    /// `Int64.min`: at any `now`.
    package var nextDue: Int64? { inFlight < policy.maxInFlight ? due.first?.at : nil }

    /// The attempt at `position` was acknowledged (2xx): the event is settled, and its lane's next one is due now.
    package mutating func acknowledged(_ position: Int64, now: Int64) {
        guard let entry = entries[position], entry.inFlight else { return }
        inFlight -= 1
        settle(position, lane: entry.lane, now: now)
    }

    /// The attempt at `position` failed at `now` (`problem` says how): retried later, or given up once `maxAge`
    /// has passed since its first attempt.
    package mutating func failed(_ position: Int64, now: Int64, problem: String) -> Verdict? {
        guard var entry = entries[position], entry.inFlight else { return nil }
        inFlight -= 1
        entry.inFlight = false
        let first = entry.firstAttemptAt ?? now
        let giveUpAt = first.addingReportingOverflow(policy.maxAge)
        let deadline = giveUpAt.overflow ? Int64.max : giveUpAt.partialValue
        if now >= deadline {
            settle(position, lane: entry.lane, now: now)
            return .deadLetter(
                DeadLetter(
                    position: position, attempts: entry.attempts, firstAttemptAt: first, deadAt: now,
                    lastError: problem))
        }
        let delay = policy.backoff(afterFailures: entry.attempts)
        let at = min(now.addingReportingOverflow(delay).partialValue, deadline)
        entries[position] = entry
        push(at: at, position: position)
        return .retry(at: at)
    }

    /// The item at `position` while it is unsettled.
    package func item(at position: Int64) -> Item? { entries[position]?.item }

    /// The oldest unsettled event's position (nil when none): what the lag is measured from.
    package var oldestUnsettled: Int64? {
        var index = windowStart
        while index < window.count {
            if entries[window[index]] != nil { return window[index] }
            index += 1
        }
        return nil
    }

    /// The oldest unsettled event's item.
    package var oldestUnsettledItem: Item? { oldestUnsettled.flatMap { entries[$0]?.item } }

    /// What changed since the last take: the watermark and the positions above it settled since (check
    /// `hasProgress` first: an empty take reports the watermark as it is).
    package mutating func takeProgress() -> Progress {
        let settled = newlySettled.filter { $0 > watermark }
        newlySettled.removeAll(keepingCapacity: true)
        watermarkReported = watermark
        return Progress(through: watermark, settled: settled)
    }

    /// Whether `takeProgress` has something to report.
    package var hasProgress: Bool { watermark != watermarkReported || !newlySettled.isEmpty }

    // MARK: Internals

    private mutating func settle(_ position: Int64, lane: String, now: Int64) {
        entries[position] = nil
        settledAbove.insert(position)
        newlySettled.append(position)
        if var queue = lanes[lane] {
            if queue.first == position {
                queue.removeFirst()
            } else {
                queue.removeAll { $0 == position }
            }
            if let next = queue.first {
                lanes[lane] = queue
                push(at: now, position: next)
            } else {
                lanes[lane] = nil
            }
        }
        advanceWatermark()
    }

    /// Moves the watermark past the settled positions at the window's start; with the window empty, to
    /// everything read.
    private mutating func advanceWatermark() {
        while windowStart < window.count, entries[window[windowStart]] == nil {
            let position = window[windowStart]
            watermark = max(watermark, position)
            settledAbove.remove(position)
            windowStart += 1
        }
        if windowStart == window.count {
            watermark = max(watermark, readThrough)
            window.removeAll(keepingCapacity: true)
            windowStart = 0
            settledAbove = settledAbove.filter { $0 > watermark }
        } else if windowStart > 1024, windowStart * 2 > window.count {
            window.removeFirst(windowStart)
            windowStart = 0
        }
    }

    private mutating func push(at: Int64, position: Int64) {
        due.append((at, position))
        var child = due.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(due[child], due[parent]) else { break }
            due.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popDue() {
        let last = due.removeLast()
        guard !due.isEmpty else { return }
        due[0] = last
        var parent = 0
        while true {
            let left = parent * 2 + 1
            let right = left + 1
            var smallest = parent
            if left < due.count, Self.less(due[left], due[smallest]) { smallest = left }
            if right < due.count, Self.less(due[right], due[smallest]) { smallest = right }
            if smallest == parent { return }
            due.swapAt(parent, smallest)
            parent = smallest
        }
    }

    private static func less(_ a: (at: Int64, position: Int64), _ b: (at: Int64, position: Int64)) -> Bool {
        (a.at, a.position) < (b.at, b.position)
    }
}
