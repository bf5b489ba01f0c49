import Synchronization

/// The request bytes one connection holds and the flow-control window it still owes the peer.
///
/// nghttp2 runs without automatic WINDOW_UPDATEs: a DATA chunk's window is granted back (`Grant`, which the
/// connection turns into `nghttp2_session_consume`) at once while the connection holds no more than `limit`
/// bytes and the process has room, and otherwise only when the stream's consumer releases bytes (a whole
/// message handed to its handler, or the stream closing). Since the peer can never have more than the
/// connection window outstanding, a connection holds at most `limit` + one connection window. Pure
/// bookkeeping, tested without sockets.
struct ReceiveLedger {
    /// Window to give back to the peer for a stream (nghttp2 also credits the connection window).
    struct Grant: Equatable {
        var stream: Int32
        var count: Int
    }

    /// Grants to make: the common case (one, for the chunk that just arrived) is kept inline, so a DATA
    /// frame costs no array.
    struct Grants: Equatable, Sequence, ExpressibleByArrayLiteral {
        private var first: Grant?
        /// Nil until a second grant (an empty array would still be retained and released with every copy).
        private var rest: [Grant]?

        init(arrayLiteral elements: Grant...) { self.init(elements) }

        /// No grant (what the hot paths return: a literal `[]` would go through an array).
        init() {}

        /// One grant, with no array (the common case: the chunk that just arrived).
        init(_ grant: Grant) { first = grant }

        init(_ elements: some Sequence<Grant>) {
            for element in elements { append(element) }
        }

        var isEmpty: Bool { first == nil }

        mutating func append(_ grant: Grant) {
            if first == nil {
                first = grant
            } else if rest == nil {
                rest = [grant]
            } else {
                rest?.append(grant)
            }
        }

        static func + (lhs: Grants, rhs: Grants) -> Grants {
            var result = lhs
            for grant in rhs { result.append(grant) }
            return result
        }

        struct Iterator: IteratorProtocol {
            fileprivate var first: Grant?
            fileprivate var rest: IndexingIterator<[Grant]>?

            mutating func next() -> Grant? {
                if let grant = first {
                    first = nil
                    return grant
                }
                return rest?.next()
            }
        }

        func makeIterator() -> Iterator { Iterator(first: first, rest: rest?.makeIterator()) }

        /// Calls `body` with each grant in order, reading them in place (no iterator copied out).
        func forEachGrant(_ body: (Grant) -> Void) {
            guard let first else { return }
            body(first)
            if let rest { for grant in rest { body(grant) } }
        }
    }

    /// Bytes held above which no window is granted.
    let limit: Int
    /// Bytes received and not yet released, over all streams. What each stream holds is kept by the caller
    /// (beside the stream, no lookup by id) and passed in.
    private(set) var held = 0
    /// Bytes received whose window was not granted back yet, by stream (empty unless over a budget).
    private var owed: [Int32: Int] = [:]

    init(limit: Int) {
        self.limit = limit
    }

    /// Window bytes not granted back yet.
    var owedBytes: Int { owed.values.reduce(0, +) }
    /// Whether any window is owed (read on every grant: no walk over the table).
    var owesWindow: Bool { !owed.isEmpty }

    /// `count` bytes arrived on `stream`, which now holds them too (`streamHeld`); returns what to grant back
    /// now.
    mutating func received(_ count: Int, stream: Int32, streamHeld: inout Int, processHasRoom: Bool) -> Grants {
        guard count > 0 else { return Grants() }
        held += count
        streamHeld += count
        if held <= limit && processHasRoom && owed.isEmpty { return Grants(Grant(stream: stream, count: count)) }
        owed[stream, default: 0] += count
        return grantsIfRoom(processHasRoom: processHasRoom)
    }

    /// The consumer of `stream` let go of up to `count` of the bytes it holds (`streamHeld`, updated);
    /// returns the amount released and what to grant back now.
    mutating func release(_ count: Int, stream: Int32, streamHeld: inout Int, processHasRoom: Bool)
        -> (released: Int, grants: Grants)
    {
        let amount = min(max(0, count), streamHeld)
        held -= amount
        streamHeld -= amount
        return (amount, grantsIfRoom(processHasRoom: processHasRoom))
    }

    /// The stream is gone with the `streamHeld` bytes it held: they are released, and its owed window is
    /// granted back whatever the budget (those bytes no longer exist).
    mutating func streamClosed(_ stream: Int32, streamHeld: Int, processHasRoom: Bool)
        -> (released: Int, grants: Grants)
    {
        let amount = min(max(0, streamHeld), held)
        held -= amount
        guard !owed.isEmpty else { return (amount, Grants()) }
        var grants = Grants()
        if let count = owed.removeValue(forKey: stream) {
            grants.append(Grant(stream: stream, count: count))
        }
        return (amount, grants + grantsIfRoom(processHasRoom: processHasRoom))
    }

    /// Everything owed, once the connection is back within its budget and the process has room.
    mutating func grantsIfRoom(processHasRoom: Bool) -> Grants {
        guard held <= limit, processHasRoom, !owed.isEmpty else { return Grants() }
        let grants = Grants(owed.sorted { $0.key < $1.key }.lazy.map { Grant(stream: $0.key, count: $0.value) })
        owed.removeAll()
        return grants
    }
}

/// The request bytes held by every connection of a server: a cap shared across its event loops.
public final class SharedReceiveBudget: Sendable {
    /// Held bytes above which connections stop granting window.
    public let limit: Int
    private let heldBytes = Atomic<Int>(0)

    /// A budget of `limit` bytes.
    public init(limit: Int) {
        self.limit = limit
    }

    /// Bytes held now (each loop's part exact whenever it holds none; see `LoopReceiveBudget`).
    public var held: Int { heldBytes.load(ordering: .relaxed) }

    /// Adds `delta` (negative: releases); only loops' views publish into it.
    fileprivate func adjust(_ delta: Int) { heldBytes.add(delta, ordering: .relaxed) }
}

/// One event loop's view of a `SharedReceiveBudget`, confined to that loop: its connections' bytes reach the
/// shared total only in steps of at least `slack` bytes, or when the loop holds none again. A call's few
/// request bytes, received and released, touch no memory another loop writes; the shared total is off by at
/// most `slack` bytes per loop, and exact whenever a loop holds nothing.
final class LoopReceiveBudget {
    let shared: SharedReceiveBudget
    /// The most one loop's count may differ from what it told the shared total.
    static let slack = 64 * 1024
    /// Request bytes this loop's connections hold.
    private(set) var held = 0
    /// What the shared total counts of them.
    private var published = 0

    init(_ shared: SharedReceiveBudget) {
        self.shared = shared
    }

    /// True while the process holds no more than its limit (this loop's bytes counted exactly).
    var hasRoom: Bool { shared.held - published + held <= shared.limit }

    func add(_ count: Int) {
        guard count > 0 else { return }
        held += count
        settle()
    }

    func subtract(_ count: Int) {
        guard count > 0 else { return }
        held -= count
        settle()
    }

    private func settle() {
        let delta = held - published
        guard delta != 0, held == 0 || abs(delta) >= Self.slack else { return }
        shared.adjust(delta)
        published = held
    }
}
