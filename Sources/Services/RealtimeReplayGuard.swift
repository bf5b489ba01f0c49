import GatewayFoundation

/// Which realtime requests the gateway answers anew: one signed within `maxAge` of now (and at most `clockSkew`
/// ahead of it), whose identifier this app has not had in that window. A repeat (Apple's retry, or a captured
/// request replayed) gets the bytes the first one got, so no replay ever yields a fresh signature; one still
/// waiting for its answer gets an empty answer. An answer is remembered until its request is too old to be
/// admitted anyway, within `maxEntries` and `maxBytes` (past them the oldest is forgotten first).
///
/// A value type with the wall time passed in: the endpoint holds it behind a lock (`RealtimeReplays`).
package struct RealtimeReplayGuard: Sendable {
    /// How long a request is admitted after it was signed, and what is remembered of the answers.
    package struct Limits: Sendable, Hashable {
        /// Milliseconds a request is admitted after its `signedDate`.
        package var maxAgeMilliseconds: Int64
        /// Milliseconds a `signedDate` may lie ahead of the gateway's clock.
        package var clockSkewMilliseconds: Int64
        /// Requests remembered at most.
        package var maxEntries: Int
        /// Bytes of identifiers and answers remembered at most.
        package var maxBytes: Int

        package init(maxAgeMilliseconds: Int64, clockSkewMilliseconds: Int64, maxEntries: Int, maxBytes: Int) {
            self.maxAgeMilliseconds = maxAgeMilliseconds
            self.clockSkewMilliseconds = clockSkewMilliseconds
            self.maxEntries = maxEntries
            self.maxBytes = maxBytes
        }
    }

    /// One request: its app's configured name and its identifier (lower-cased).
    package struct Key: Sendable, Hashable {
        package let app: String
        package let requestIdentifier: String

        package init(app: String, requestIdentifier: String) {
            self.app = app
            self.requestIdentifier = requestIdentifier.lowercased()
        }

        var bytes: Int { app.utf8.count + requestIdentifier.utf8.count }
    }

    /// What to do with a request.
    package enum Admission: Sendable, Hashable {
        /// Answer it (and hand the answer in with `answered`).
        case admitted
        /// Refuse it: signed more than `maxAge` ago, or without a `signedDate`.
        case stale
        /// Refuse it: signed more than `clockSkew` in the future.
        case future
        /// A repeat of one still being answered: answer no choice.
        case inFlight
        /// A repeat of one answered: answer these bytes again.
        case repeated([UInt8])
    }

    /// What one entry costs beyond its key and answer (dictionary slot, order record).
    static let entryOverheadBytes = 96

    private struct Entry {
        /// Wall milliseconds after which the request is stale.
        var expiresAt: Int64
        /// The answer sent; nil while it is being answered.
        var body: [UInt8]?
        /// Which order record is this entry's (an older record of the same key is skipped).
        var sequence: UInt64
        var bytes: Int
    }

    package let limits: Limits
    private var entries: [Key: Entry] = [:]
    /// Keys in the order they were remembered, from `head` on; the oldest is forgotten first.
    private var order: [(key: Key, sequence: UInt64)] = []
    private var head = 0
    private var nextSequence: UInt64 = 0
    /// Bytes remembered now.
    package private(set) var bytes = 0

    package init(limits: Limits) { self.limits = limits }

    /// Requests remembered now.
    package var count: Int { entries.count }

    /// What to do with the request `key` signed at `signedDate` (nil: absent), at wall time `now` (milliseconds).
    package mutating func admit(_ key: Key, signedDate: Int64?, now: Int64) -> Admission {
        forgetExpired(now: now)
        guard let signedDate, signedDate >= Self.sum(now, -limits.maxAgeMilliseconds) else { return .stale }
        guard signedDate <= Self.sum(now, limits.clockSkewMilliseconds) else { return .future }
        if let entry = entries[key], entry.expiresAt >= now {
            return entry.body.map { .repeated($0) } ?? .inFlight
        }
        remember(key, expiresAt: Self.sum(signedDate, limits.maxAgeMilliseconds))
        return .admitted
    }

    /// Hands in the answer `body` sent to the request `key` admitted before.
    package mutating func answered(_ key: Key, body: [UInt8], now: Int64) {
        forgetExpired(now: now)
        // The same record, now with its answer: it keeps its place in the order.
        guard var entry = entries[key] else { return }
        let added = body.count - (entry.body?.count ?? 0)
        entry.body = body
        entry.bytes += added
        entries[key] = entry
        bytes += added
        shrink()
    }

    private mutating func remember(_ key: Key, expiresAt: Int64) {
        if let old = entries.removeValue(forKey: key) { bytes -= old.bytes }
        let cost = key.bytes + Self.entryOverheadBytes
        nextSequence += 1
        entries[key] = Entry(expiresAt: expiresAt, body: nil, sequence: nextSequence, bytes: cost)
        order.append((key, nextSequence))
        bytes += cost
        shrink()
    }

    /// Forgets from the oldest on while it is expired.
    private mutating func forgetExpired(now: Int64) {
        while head < order.count {
            let (key, sequence) = order[head]
            if let entry = entries[key], entry.sequence == sequence, entry.expiresAt >= now { break }
            forgetOldest()
        }
        compact()
    }

    /// Forgets the oldest while past a bound.
    private mutating func shrink() {
        while head < order.count, entries.count > limits.maxEntries || bytes > limits.maxBytes {
            forgetOldest()
        }
        compact()
    }

    private mutating func forgetOldest() {
        let (key, sequence) = order[head]
        head += 1
        if let entry = entries[key], entry.sequence == sequence {
            entries[key] = nil
            bytes -= entry.bytes
        }
    }

    /// `a + b`, clamped (a `signedDate` is Apple's number: any Int64).
    private static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : total
    }

    /// Drops the forgotten records once they are half of the order (amortized O(1) per record).
    private mutating func compact() {
        guard head > 0, head * 2 >= order.count else { return }
        order.removeFirst(head)
        head = 0
    }
}

/// The realtime URL's `RealtimeReplayGuard`, shared by the requests of every loop.
package final class RealtimeReplays: Sendable {
    private let state: Lock<RealtimeReplayGuard>

    package init(limits: RealtimeReplayGuard.Limits) { state = Lock(RealtimeReplayGuard(limits: limits)) }

    package func admit(_ key: RealtimeReplayGuard.Key, signedDate: Int64?, now: Int64)
        -> RealtimeReplayGuard.Admission
    {
        state.withLock { $0.admit(key, signedDate: signedDate, now: now) }
    }

    package func answered(_ key: RealtimeReplayGuard.Key, body: [UInt8], now: Int64) {
        state.withLock { $0.answered(key, body: body, now: now) }
    }
}
