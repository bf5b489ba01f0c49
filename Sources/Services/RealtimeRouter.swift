import GatewayFoundation

/// Which `ServeRealtimeRequests` stream answers each realtime request, and which requests wait for an answer:
/// the pure state behind `RealtimeBroker` (no locks, no tasks; time is passed in).
///
/// Routing: a request for an app goes to the streams serving that app in turn (round robin over the order they
/// opened in), skipping a stream that already holds `maxPendingPerStream` unanswered requests; with no stream, or
/// every one full, it is not sent (the caller answers the app's default). An answer counts only on the stream the
/// request was sent to and only once; one after the request's deadline is late.
struct RealtimeRouter: Sendable {
    /// A stream's number on this replica.
    typealias StreamID = UInt64
    /// A sent request's number on this replica.
    typealias Ticket = UInt64

    /// Where a request went.
    enum Route: Equatable {
        /// Sent on `stream`; its answer resolves `ticket`.
        case sent(stream: StreamID, ticket: Ticket)
        /// No stream serves the app.
        case noStream
        /// Every stream of the app holds its maximum of unanswered requests.
        case full
        /// The same request identifier is already waiting on this replica (Apple's retry, or a replay).
        case duplicate
    }

    /// What an answer from a stream matched.
    enum Match: Equatable {
        /// The request sent on that stream, before its deadline.
        case onTime(Ticket)
        /// The request sent on that stream, after its deadline (no longer waiting).
        case late(Ticket)
        /// No request with that identifier waits on that stream (never sent there, answered or expired before).
        case unknown
    }

    /// Why a stream could not open.
    enum OpenRefusal: Error, Equatable {
        /// The replica holds `maxStreams` streams.
        case replicaFull
        /// The caller holds its own maximum of streams.
        case callerFull(limit: Int)
    }

    private struct Stream {
        let apps: Set<String>
        /// The caller that opened it (nil: anonymous, open mode).
        let caller: String?
        /// Request identifier → ticket, for the requests sent on this stream not yet answered.
        var pending: [String: Ticket] = [:]
    }

    private struct Waiting {
        let stream: StreamID
        let requestIdentifier: String
        let deadline: MonotonicInstant
    }

    let maxPendingPerStream: Int
    let maxStreams: Int
    private var streams: [StreamID: Stream] = [:]
    /// The streams of each app, in the order they opened.
    private var streamsByApp: [String: [StreamID]] = [:]
    private var nextIndex: [String: Int] = [:]
    private var waiting: [Ticket: Waiting] = [:]
    /// Open streams per caller.
    private var streamsByCaller: [String: Int] = [:]
    private var identifiers: Set<String> = []
    private var lastStream: StreamID = 0
    private var lastTicket: Ticket = 0

    init(maxPendingPerStream: Int, maxStreams: Int) {
        self.maxPendingPerStream = max(1, maxPendingPerStream)
        self.maxStreams = max(1, maxStreams)
    }

    /// Streams open now.
    var streamCount: Int { streams.count }
    /// Requests waiting for an answer now.
    var waitingCount: Int { waiting.count }

    /// Streams `caller` holds open now.
    func streamCount(of caller: String) -> Int { streamsByCaller[caller, default: 0] }

    /// Opens a stream serving `apps` (configured names) for `caller` (nil: anonymous), refused when `maxStreams`
    /// are open, or when `caller` already holds `callerLimit` (nil: no limit of its own).
    mutating func open(
        apps: Set<String>, caller: String?, callerLimit: Int?
    ) -> Result<StreamID, OpenRefusal> {
        guard streams.count < maxStreams else { return .failure(.replicaFull) }
        if let caller, let callerLimit, streamsByCaller[caller, default: 0] >= callerLimit {
            return .failure(.callerFull(limit: callerLimit))
        }
        lastStream += 1
        streams[lastStream] = Stream(apps: apps, caller: caller)
        if let caller { streamsByCaller[caller, default: 0] += 1 }
        for app in apps { streamsByApp[app, default: []].append(lastStream) }
        return .success(lastStream)
    }

    /// Closes a stream: the tickets that waited on it (answered by no one now).
    mutating func close(_ stream: StreamID) -> [Ticket] {
        guard let closed = streams.removeValue(forKey: stream) else { return [] }
        if let caller = closed.caller {
            streamsByCaller[caller, default: 1] -= 1
            if streamsByCaller[caller] == 0 { streamsByCaller[caller] = nil }
        }
        for app in closed.apps {
            streamsByApp[app]?.removeAll { $0 == stream }
            if streamsByApp[app]?.isEmpty == true { streamsByApp[app] = nil }
        }
        let tickets = Array(closed.pending.values).sorted()
        for ticket in tickets {
            if let entry = waiting.removeValue(forKey: ticket) { identifiers.remove(entry.requestIdentifier) }
        }
        return tickets
    }

    /// Sends the request `requestIdentifier` (lower-cased by the caller) for `app` to the next stream with room.
    mutating func route(app: String, requestIdentifier: String, deadline: MonotonicInstant) -> Route {
        guard let candidates = streamsByApp[app], !candidates.isEmpty else { return .noStream }
        guard !identifiers.contains(requestIdentifier) else { return .duplicate }
        let start = nextIndex[app, default: 0]
        for step in 0..<candidates.count {
            let index = (start + step) % candidates.count
            let stream = candidates[index]
            guard var entry = streams[stream], entry.pending.count < maxPendingPerStream else { continue }
            lastTicket += 1
            entry.pending[requestIdentifier] = lastTicket
            streams[stream] = entry
            waiting[lastTicket] = Waiting(stream: stream, requestIdentifier: requestIdentifier, deadline: deadline)
            identifiers.insert(requestIdentifier)
            nextIndex[app] = (index + 1) % candidates.count
            return .sent(stream: stream, ticket: lastTicket)
        }
        return .full
    }

    /// An answer `stream` gave for `requestIdentifier` (lower-cased by the caller) at `now`.
    mutating func answer(stream: StreamID, requestIdentifier: String, now: MonotonicInstant) -> Match {
        guard let ticket = streams[stream]?.pending.removeValue(forKey: requestIdentifier),
            let entry = waiting.removeValue(forKey: ticket)
        else { return .unknown }
        identifiers.remove(entry.requestIdentifier)
        return now < entry.deadline ? .onTime(ticket) : .late(ticket)
    }

    /// Stops waiting for `ticket` (its deadline passed): true when it was still waiting.
    mutating func expire(_ ticket: Ticket) -> Bool {
        guard let entry = waiting.removeValue(forKey: ticket) else { return false }
        streams[entry.stream]?.pending[entry.requestIdentifier] = nil
        identifiers.remove(entry.requestIdentifier)
        return true
    }

    /// Every ticket whose deadline is at or before `now`, no longer waiting (oldest first).
    mutating func expireAll(now: MonotonicInstant) -> [Ticket] {
        let due = waiting.filter { $0.value.deadline <= now }.keys.sorted()
        for ticket in due { _ = expire(ticket) }
        return due
    }
}
