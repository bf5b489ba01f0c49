import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import Logging
import Metrics
import NotificationStore

/// One outbound sink: a task that reads its log (the subscription events, or the notification log) after the
/// commits that made them, POSTs each entry to one endpoint on the schedule `DeliverySchedule` decides, and keeps
/// its progress in the store (`EventSinkStore`), so a restart delivers again whatever was not acknowledged.
///
/// Each sink is its own task with its own bounded window, so one slow endpoint never delays another, and nothing
/// here is on the path of Apple's webhook: delivery starts from the outbox once the state's commit is over.
package final class EventSink<Item: Sendable>: Sendable {
    /// Where the sink delivers, and how a request is dressed.
    package struct Endpoint: Sendable {
        package var id: EventSinkID
        /// The URL without user information, query or fragment (metrics, logs, spans).
        package var label: String
        /// One attempt's limit.
        package var timeout: Duration
        /// The header naming the entry (`appstore-gateway-event-id`, `appstore-gateway-notification-uuid`).
        package var idHeader: String
        /// The secrets that sign each delivery (`appstore-gateway-signature`); none: no signature header.
        package var secrets: [[UInt8]]

        package init(id: EventSinkID, timeout: Duration, idHeader: String, secrets: [[UInt8]] = []) {
            self.id = id
            self.label = TeamWebhook.label(of: id.url)
            self.timeout = timeout
            self.idHeader = idHeader
            self.secrets = secrets
        }

        /// The headers of one attempt at `unixSeconds` (the signature is made fresh for each attempt).
        package func headers(id: String, body: [UInt8], unixSeconds: Int64) -> [(name: String, value: String)] {
            var headers: [(name: String, value: String)] = [("content-type", "application/json"), (idHeader, id)]
            if !secrets.isEmpty {
                headers.append(
                    (
                        TeamWebhook.signatureHeader,
                        TeamWebhook.signature(secrets: secrets, unixSeconds: unixSeconds, body: body)
                    ))
            }
            return headers
        }
    }

    /// What a sink reads: its log, and how an entry becomes a request.
    package struct Feed: Sendable {
        /// The newest position of the log now (a sink's first start begins after it).
        package var newest: @Sendable () async throws(NotificationStoreFailure) -> Int64
        /// Entries after a position, at most a limit, and how far the log was read.
        package var read: @Sendable (Int64, Int) async throws(NotificationStoreFailure) -> Page
        /// Raised when the log grows.
        package var signal: LiveSignal
        /// How long the sink waits for the signal before reading again anyway (another process may have written).
        package var pollInterval: Duration
        /// The entry's id (the id header; a dead letter's `event_id`).
        package var id: @Sendable (Item) -> String
        /// When the entry happened (UNIX ms): the lag is measured from it.
        package var occurredAt: @Sendable (Item) -> Int64
        /// The exact body to POST (the same bytes for every attempt).
        package var body: @Sendable (Item) -> [UInt8]

        package init(
            newest: @escaping @Sendable () async throws(NotificationStoreFailure) -> Int64,
            read: @escaping @Sendable (Int64, Int) async throws(NotificationStoreFailure) -> Page,
            signal: LiveSignal, pollInterval: Duration, id: @escaping @Sendable (Item) -> String,
            occurredAt: @escaping @Sendable (Item) -> Int64, body: @escaping @Sendable (Item) -> [UInt8]
        ) {
            self.newest = newest
            self.read = read
            self.signal = signal
            self.pollInterval = pollInterval
            self.id = id
            self.occurredAt = occurredAt
            self.body = body
        }
    }

    /// Entries read from the log.
    package struct Page: Sendable {
        /// Entries for this sink, in position order, each with its lane (entries of one lane are delivered in order).
        package var entries: [(position: Int64, lane: String, item: Item)]
        /// How far the log was read (at least the last entry's position).
        package var through: Int64
        /// Whether the read stopped at its limit (more may follow at once).
        package var full: Bool

        package init(entries: [(position: Int64, lane: String, item: Item)], through: Int64, full: Bool) {
            self.entries = entries
            self.through = through
            self.full = full
        }
    }

    /// An entry as a request.
    struct Message: Sendable {
        var id: String
        var body: [UInt8]
    }

    let endpoint: Endpoint
    let policy: DeliverySchedule<Item>.Policy
    let feed: Feed
    let store: any EventSinkStore
    let transport: any DeliveryTransport
    let series: EventSinkMetrics.Series
    let tracer: any Tracer
    let clock: any GatewayClock
    let logger: Logger
    /// The longest the sink keeps settled events unrecorded (one commit per batch, not per acknowledgement).
    let saveInterval: Duration = .milliseconds(100)

    package init(
        endpoint: Endpoint, policy: DeliverySchedule<Item>.Policy, feed: Feed, store: any EventSinkStore,
        transport: any DeliveryTransport, metrics: EventSinkMetrics, tracer: any Tracer = SilentTracer(),
        clock: any GatewayClock = SystemClock(), logger: Logger = Logger(label: "appstore-gateway.sinks")
    ) {
        self.endpoint = endpoint
        self.policy = policy
        self.feed = feed
        self.store = store
        self.transport = transport
        self.series = metrics.series(sink: endpoint.label)
        self.tracer = tracer
        self.clock = clock
        self.logger = logger
    }

    private enum Wake: Sendable {
        case logGrew
        case tick(UInt64)
        case attempted(position: Int64, outcome: DeliveryOutcome, body: [UInt8])
    }

    /// Delivers until the task is cancelled; attempts under way are cancelled with it, and what was settled is
    /// recorded once more on the way out.
    package func run() async {
        guard let progress = await open() else { return }
        var schedule = DeliverySchedule<Item>(policy: policy, watermark: progress.through, settled: progress.settled)
        var deadLetterCount = (try? await store.deadLetterCount(endpoint.id)) ?? 0
        series.deadLetters?.set(Double(deadLetterCount))
        var unsaved = EventSinkUpdate(through: schedule.watermark)
        let (wakes, continuation) = AsyncStream<Wake>.makeStream()
        let signal = feed.signal
        let poll = feed.pollInterval
        // At most one "the log grew" wake-up waits at a time: while the sink is busy (its writer queue slow under
        // ingestion), commits do not pile up wake-ups that would each cost a read later.
        let growthPending = PendingFlag()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // The generation is read before the wake-up is handed on, so a commit raised after it wakes the
                // next wait at once, and one raised before it is read by the read the wake-up causes.
                var seen = signal.generation
                while !Task.isCancelled {
                    await signal.wait(past: seen, timeout: poll)
                    seen = signal.generation
                    if growthPending.raise() { continuation.yield(.logGrew) }
                }
            }
            var wakesIterator = wakes.makeAsyncIterator()
            var timer: (id: UInt64, at: Int64, task: Task<Void, Never>)?
            var timers: UInt64 = 0
            var moreToRead = true
            var readRetryAt: Int64?
            var readPause: Int64 = 50
            var dirty = false
            var lastSave = Int64.min
            var saveRetryAt: Int64?
            var countRefreshAt = nowMillis() + 30_000
            while !Task.isCancelled {
                var now = nowMillis()
                // Read while the window has room.
                if moreToRead, schedule.room > 0, readRetryAt.map({ now >= $0 }) ?? true {
                    do throws(NotificationStoreFailure) {
                        let page = try await feed.read(schedule.readThrough, min(schedule.room, 256))
                        for entry in page.entries where entry.position > schedule.readThrough {
                            schedule.offer(position: entry.position, lane: entry.lane, item: entry.item)
                        }
                        schedule.skip(through: page.through)
                        moreToRead = page.full
                        readRetryAt = nil
                        readPause = 50
                    } catch {
                        readRetryAt = now + readPause
                        readPause = min(readPause * 2, 5_000)
                        logger.warning(
                            "event sink cannot read its log",
                            metadata: ["sink": "\(endpoint.label)", "problem": "\(error)"])
                    }
                    now = nowMillis()
                }
                for dispatch in schedule.ready(now: now) {
                    let message = Message(id: feed.id(dispatch.item), body: feed.body(dispatch.item))
                    group.addTask {
                        let outcome = await self.attempt(message, number: dispatch.attempt)
                        continuation.yield(
                            .attempted(position: dispatch.position, outcome: outcome, body: message.body))
                    }
                }
                if schedule.hasProgress {
                    let progress = schedule.takeProgress()
                    unsaved.through = progress.through
                    unsaved.settled += progress.settled
                    dirty = true
                }
                if dirty, now >= lastSave + saveInterval.wholeMilliseconds, saveRetryAt.map({ now >= $0 }) ?? true {
                    do throws(NotificationStoreFailure) {
                        try await store.record(endpoint.id, unsaved)
                        deadLetterCount += unsaved.deadLetters.count
                        series.deadLetters?.set(Double(deadLetterCount))
                        unsaved = EventSinkUpdate(through: unsaved.through)
                        dirty = false
                        saveRetryAt = nil
                    } catch {
                        saveRetryAt = now + 1_000
                        logger.warning(
                            "event sink cannot record its progress",
                            metadata: ["sink": "\(endpoint.label)", "problem": "\(error)"])
                    }
                    lastSave = now
                }
                if now >= countRefreshAt {
                    // A replay (another process) removes dead letters: count them again now and then.
                    if let count = try? await store.deadLetterCount(endpoint.id) {
                        deadLetterCount = count
                        series.deadLetters?.set(Double(count))
                    }
                    countRefreshAt = now + 30_000
                }
                let oldest = schedule.oldestUnsettledItem.map(feed.occurredAt)
                series.lag?.set(oldest.map { Double(max(0, now - $0)) / 1000 } ?? 0)

                // Sleep until the next due attempt, read retry, save or lag update, unless woken sooner.
                var wakeAt = [schedule.nextDue, readRetryAt, saveRetryAt].compactMap { $0 }.min()
                if dirty { wakeAt = min(wakeAt ?? Int64.max, lastSave + saveInterval.wholeMilliseconds) }
                if oldest != nil { wakeAt = min(wakeAt ?? Int64.max, now + 1_000) }
                if moreToRead, schedule.room > 0, readRetryAt == nil { wakeAt = now }
                if let at = wakeAt, timer.map({ at < $0.at }) ?? true {
                    timer?.task.cancel()
                    timers &+= 1
                    let id = timers
                    let delay = at > now ? at - now : 0  // `at` may be Int64.min: due at once
                    timer = (
                        id, at,
                        Task {
                            if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
                            continuation.yield(.tick(id))
                        }
                    )
                }
                guard let wake = await wakesIterator.next() else { break }
                switch wake {
                case .logGrew:
                    growthPending.lower()
                    moreToRead = true
                case .tick(let id):
                    if timer?.id == id { timer = nil }
                case .attempted(let position, let outcome, let body):
                    settle(position, outcome: outcome, body: body, schedule: &schedule, unsaved: &unsaved)
                }
            }
            timer?.task.cancel()
            continuation.finish()
            group.cancelAll()
        }
        if schedule.hasProgress {
            let progress = schedule.takeProgress()
            unsaved.through = progress.through
            unsaved.settled += progress.settled
        }
        // What was settled before the cancellation: recorded, so a restart does not send it again.
        try? await store.record(endpoint.id, unsaved)
    }

    /// How an attempt's outcome moves the schedule.
    private func settle(
        _ position: Int64, outcome: DeliveryOutcome, body: [UInt8], schedule: inout DeliverySchedule<Item>,
        unsaved: inout EventSinkUpdate
    ) {
        let now = nowMillis()
        if case .answered(let status) = outcome, (200..<300).contains(status) {
            schedule.acknowledged(position, now: now)
            series.delivered?.increment()
            return
        }
        let id = schedule.item(at: position).map(feed.id) ?? ""
        switch schedule.failed(position, now: now, problem: outcome.problem) {
        case .retry(let at)?:
            series.retried?.increment()
            logger.debug(
                "event sink delivery failed, retrying",
                metadata: [
                    "sink": "\(endpoint.label)", "id": "\(id)", "problem": "\(outcome.problem)",
                    "retry_in_ms": "\(at - now)",
                ])
        case .deadLetter(let letter)?:
            unsaved.deadLetters.append(
                EventDeadLetter(
                    position: position, eventId: id, attempts: letter.attempts, firstAttemptAt: letter.firstAttemptAt,
                    deadAt: letter.deadAt, lastError: letter.lastError, body: body))
            logger.warning(
                "event sink gave a delivery up: dead letter (appstore-gateway events replay sends it again)",
                metadata: [
                    "sink": "\(endpoint.label)", "id": "\(id)", "attempts": "\(letter.attempts)",
                    "problem": "\(letter.lastError)",
                ])
        case nil:
            break
        }
    }

    /// One POST, with its CLIENT span.
    func attempt(_ message: Message, number: Int) async -> DeliveryOutcome {
        let trace = TraceContext(traceparent: nil, tracestate: nil)
        var span = tracer.span(of: trace, name: "POST \(endpoint.id.kind.rawValue)", kind: .client)
        let headers = endpoint.headers(
            id: message.id, body: message.body, unixSeconds: nowMillis().floorDivided(by: 1000))
        let outcome = await transport.post(
            url: endpoint.id.url, headers: headers, body: message.body, timeout: endpoint.timeout)
        if span != nil {
            span?.set("http.request.method", "POST")
            span?.set("url.full", endpoint.label)
            span?.set("appstore_gateway.delivery.attempt", number)
            span?.set("appstore_gateway.delivery.id", message.id)
            if number > 1 { span?.set("http.request.resend_count", number - 1) }
            switch outcome {
            case .answered(let status):
                span?.set("http.response.status_code", status)
                if !(200..<300).contains(status) { span?.status = .error("HTTP \(status)") }
            case .failed(let problem):
                span?.status = .error(problem)
            }
            tracer.end(span)
        }
        return outcome
    }

    /// Opens the sink's progress (at the log's newest position on its first start); retried until it works or the
    /// task is cancelled (nil).
    private func open() async -> EventSinkProgress? {
        var pause: Duration = .milliseconds(100)
        while !Task.isCancelled {
            do throws(NotificationStoreFailure) {
                let newest = try await feed.newest()
                return try await store.openSink(endpoint.id, startingAfter: newest, nowMillis: nowMillis())
            } catch {
                logger.warning(
                    "event sink cannot open its progress",
                    metadata: ["sink": "\(endpoint.label)", "problem": "\(error)"])
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
        return nil
    }

    private func nowMillis() -> Int64 { clock.wallNow().millisecondsSince1970 }
}

/// How one attempt ended.
package enum DeliveryOutcome: Sendable, Hashable {
    /// The endpoint answered with this status (2xx acknowledges; anything else is retried: redirects are not
    /// followed).
    case answered(status: Int)
    /// No answer: timed out, refused, reset, TLS failure, an answer too large.
    case failed(String)

    /// What a log line or a dead letter says about it.
    package var problem: String {
        switch self {
        case .answered(let status): "HTTP \(status)"
        case .failed(let problem): problem
        }
    }
}

/// Where sinks POST (the upstream HTTP client; a fake in tests).
package protocol DeliveryTransport: Sendable {
    /// POSTs `body` to `url` with `headers`, within `timeout`.
    func post(url: String, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration) async
        -> DeliveryOutcome
}

/// Sinks' POSTs through the gateway's libcurl client (one client for every team endpoint: the system's CAs, small
/// answers; redirects are never followed).
package struct UpstreamDeliveryTransport: DeliveryTransport {
    let client: UpstreamHTTPClient

    package init(client: UpstreamHTTPClient) {
        self.client = client
    }

    package func post(url: String, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration) async
        -> DeliveryOutcome
    {
        do {
            let response = try await client.send(
                UpstreamRequest(method: .post, url: url, headers: headers, body: body, timeout: timeout))
            return .answered(status: response.status)
        } catch {
            return .failed(Self.describe(error))
        }
    }

    static func describe(_ error: UpstreamTransportError) -> String {
        switch error.kind {
        case .timedOut: "timed out"
        case .cancelled: "cancelled"
        case .connectionFailed: "connection failed: \(error.message)"
        case .responseTooLarge: "answer too large"
        case .invalidRequest: "invalid request: \(error.message)"
        case .shutDown: "client shut down"
        }
    }
}

/// A flag raised by one task and lowered by another: `raise` tells whether it was down.
private final class PendingFlag: Sendable {
    private let state = Lock(false)

    func raise() -> Bool {
        state.withLock { raised in
            defer { raised = true }
            return !raised
        }
    }

    func lower() { state.withLock { $0 = false } }
}
