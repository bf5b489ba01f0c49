import Cryptography
import Foundation
import GatewayFoundation
import NotificationStore
import ProtoCodec
import Services
import Testing

/// The sink's task against a fake endpoint and the memory sink store (no socket): every entry acknowledged once,
/// in order per lane, retried through failures, its progress kept for the next start, dead letters with their
/// bodies; and the pieces a delivery is made of (signature, body, label).
@Suite struct EventSinkTests {
    /// A log of strings "lane:n" at positions 1, 2, …; more can be appended.
    final class Log: Sendable {
        let entries = Lock([(position: Int64, lane: String, item: String)]())
        let signal = LiveSignal()

        func append(_ lane: String, _ count: Int) {
            entries.withLock { entries in
                for _ in 0..<count {
                    let n = entries.count + 1
                    entries.append((Int64(n), lane, "\(lane):\(entries.filter { $0.lane == lane }.count + 1)"))
                }
            }
            signal.raise()
        }

        var feed: EventSink<String>.Feed {
            EventSink<String>.Feed(
                newest: { 0 },
                read: { position, limit in
                    let page = self.entries.withLock { Array($0.filter { $0.position > position }.prefix(limit)) }
                    return EventSink<String>.Page(
                        entries: page, through: page.last?.position ?? position, full: page.count >= limit)
                },
                signal: signal, pollInterval: .milliseconds(50), id: { $0 }, occurredAt: { _ in 0 },
                body: { Array("{\"id\":\"\($0)\"}".utf8) })
        }
    }

    /// An endpoint that answers what `answer` says and records what it was sent.
    final class Endpoint: DeliveryTransport {
        struct Request: Sendable {
            var id: String
            var headers: [String: String]
            var body: [UInt8]
        }

        let requests = Lock([Request]())
        let answer: @Sendable (String, Int) -> DeliveryOutcome

        init(answer: @escaping @Sendable (String, Int) -> DeliveryOutcome) {
            self.answer = answer
        }

        func post(url: String, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration) async
            -> DeliveryOutcome
        {
            let fields = Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
            let id = fields[TeamWebhook.eventIDHeader] ?? ""
            let count = requests.withLock { requests in
                requests.append(Request(id: id, headers: fields, body: body))
                return requests.count
            }
            return answer(id, count)
        }

        /// The ids acknowledged, in order.
        func acknowledged(_ isAck: (String, Int) -> Bool) -> [String] {
            requests.withLock { requests in requests.enumerated().filter { isAck($1.id, $0 + 1) }.map(\.element.id) }
        }
    }

    static let id = EventSinkID(kind: .subscriptionEvents, url: "https://user:pw@team.example/hooks?k=v")

    final class CollectingTracer: Tracer {
        let spans = Lock<[SpanRecord]>([])
        func isSampled(_ trace: TraceContext) -> Bool { true }
        func record(_ span: SpanRecord) { spans.withLock { $0.append(span) } }
        func unixNanos() -> UInt64 { 1_700_000_000_000_000_000 }
    }

    static func sink(
        _ log: Log, _ endpoint: Endpoint, store: any EventSinkStore, maxAge: Int64 = 60_000,
        secrets: [[UInt8]] = [Array("s3cret".utf8)], tracer: any Tracer = SilentTracer()
    ) -> EventSink<String> {
        EventSink(
            endpoint: EventSink<String>.Endpoint(
                id: id, timeout: .seconds(1), idHeader: TeamWebhook.eventIDHeader, secrets: secrets),
            policy: DeliverySchedule<String>.Policy(maxBackoff: 20, maxAge: maxAge), feed: log.feed, store: store,
            transport: endpoint, metrics: EventSinkMetrics.teamWebhooks(registry: nil), tracer: tracer)
    }

    @Test func eachAttemptIsOneClientSpanWithTheURLItsStatusAndItsNumber() async throws {
        let log = Log()
        let tracer = CollectingTracer()
        let endpoint = Endpoint { _, count in count == 1 ? .answered(status: 503) : .answered(status: 200) }
        let running = Task { await Self.sink(log, endpoint, store: MemoryEventSinkStore(), tracer: tracer).run() }
        log.append("a", 1)
        try await Self.eventually { tracer.spans.withLock { $0.count } == 2 }
        running.cancel()
        await running.value
        let spans = tracer.spans.withLock { $0 }
        #expect(spans.map(\.kind) == [.client, .client])
        #expect(spans.map(\.name) == ["POST subscription_events", "POST subscription_events"])
        func attribute(_ span: SpanRecord, _ key: String) -> SpanRecord.Value? {
            span.attributes.first { $0.key == key }?.value
        }
        #expect(spans.map { attribute($0, "http.response.status_code") } == [.int(503), .int(200)])
        #expect(spans.map { attribute($0, "appstore_gateway.delivery.attempt") } == [.int(1), .int(2)])
        // The URL without its credentials or query.
        #expect(attribute(spans[0], "url.full") == .string("https://team.example/hooks"))
        #expect(spans[0].status == .error("HTTP 503"))
        #expect(spans[1].status == .unset)
    }

    /// Waits (polling, at most 10 s) until `condition` holds.
    static func eventually(_ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try await !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func everyEntryIsAcknowledgedOnceInOrderPerLaneThroughFailuresAndARestartResendsNothing() async throws {
        let log = Log()
        let store = MemoryEventSinkStore()
        // Every third request fails; a lane's entries must still be acknowledged in order.
        let endpoint = Endpoint { _, count in count % 3 == 0 ? .answered(status: 500) : .answered(status: 204) }
        let running = Task { await Self.sink(log, endpoint, store: store).run() }
        log.append("a", 5)
        log.append("b", 5)
        log.append("a", 5)
        let isAck: (String, Int) -> Bool = { _, count in count % 3 != 0 }
        try await Self.eventually { Set(endpoint.acknowledged(isAck)).count == 15 }
        let acknowledged = endpoint.acknowledged(isAck)
        #expect(acknowledged.count == 15)
        for lane in ["a", "b"] {
            let order = acknowledged.filter { $0.hasPrefix(lane + ":") }
            #expect(order == (1...order.count).map { "\(lane):\($0)" })
        }
        try await Self.eventually {
            try await store.openSink(Self.id, startingAfter: 0, nowMillis: 0) == EventSinkProgress(through: 15)
        }
        running.cancel()
        await running.value

        // Started again: nothing is sent again; what comes next is.
        let again = Endpoint { _, _ in .answered(status: 200) }
        let restarted = Task { await Self.sink(log, again, store: store).run() }
        log.append("c", 2)
        try await Self.eventually { again.requests.withLock { $0.count } == 2 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(again.requests.withLock { $0.map(\.id) } == ["c:1", "c:2"])
        restarted.cancel()
        await restarted.value
    }

    @Test func aDeliveryIsSignedWithEverySecretAndNamesItsEvent() async throws {
        let log = Log()
        let endpoint = Endpoint { _, _ in .answered(status: 200) }
        let secrets = [Array("new".utf8), Array("old".utf8)]
        let running = Task { await Self.sink(log, endpoint, store: MemoryEventSinkStore(), secrets: secrets).run() }
        log.append("a", 1)
        try await Self.eventually { endpoint.requests.withLock { !$0.isEmpty } }
        running.cancel()
        await running.value
        let request = try #require(endpoint.requests.withLock { $0.first })
        #expect(request.headers["content-type"] == "application/json")
        #expect(request.headers[TeamWebhook.eventIDHeader] == "a:1")
        let signature = try #require(request.headers[TeamWebhook.signatureHeader])
        let parts = signature.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
        #expect(parts.map { $0[0] } == ["t", "v1", "v1"])
        let t = try #require(Int64(parts[0][1]))
        #expect(abs(t - Int64(Date().timeIntervalSince1970)) < 60)
        for (index, secret) in secrets.enumerated() {
            let code = HMACSHA256.authenticationCode(key: secret, message: Array("\(t).".utf8) + request.body)
            #expect(parts[index + 1][1] == code.map { String(format: "%02x", $0) }.joined())
        }
    }

    @Test func anEntryFailingPastMaxAgeIsDeadLetteredWithItsBodyAndItsLaneMovesOn() async throws {
        let log = Log()
        let store = MemoryEventSinkStore()
        let endpoint = Endpoint { id, _ in id == "a:1" ? .failed("connection refused") : .answered(status: 202) }
        let running = Task { await Self.sink(log, endpoint, store: store, maxAge: 150).run() }
        log.append("a", 3)
        try await Self.eventually { try await store.deadLetterCount(Self.id) == 1 }
        try await Self.eventually { endpoint.acknowledged { id, _ in id != "a:1" } == ["a:2", "a:3"] }
        running.cancel()
        await running.value
        let letter = try #require(try await store.deadLetters(Self.id, deadSince: 0, after: 0, limit: 10).first)
        #expect(letter.position == 1 && letter.eventId == "a:1")
        #expect(letter.body == Array("{\"id\":\"a:1\"}".utf8))
        #expect(letter.lastError == "connection refused")
        #expect(letter.attempts >= 2)
        #expect(letter.deadAt - letter.firstAttemptAt >= 150)
    }

    @Test func theSignatureIsTheHexHMACOfTimestampDotBody() {
        // As examples/webhooks/python/receiver.py's sign(): hmac.new(b"whsec", b"1700000000." + body, sha256).
        let body = Array("{\"eventId\":\"evt-1\"}".utf8)
        let header = TeamWebhook.signature(secrets: [Array("whsec".utf8)], unixSeconds: 1_700_000_000, body: body)
        let code = HMACSHA256.authenticationCode(key: Array("whsec".utf8), message: Array("1700000000.".utf8) + body)
        #expect(header == "t=1700000000,v1=" + code.map { String(format: "%02x", $0) }.joined())
        #expect(TeamWebhook.signature(secrets: [], unixSeconds: 5, body: body) == "t=5")
    }

    @Test func theBodyIsTheEventInProto3JSON() throws {
        var event = SubscriptionEvent()
        event.eventId = "7d1c3e52"
        event.app = "example"
        event.environment = .sandbox
        event.originalTransactionId = "2000000000000001"
        event.sequence = 3
        event.type = .renewal
        event.previousStatus = .active
        event.occurredAt = ProtoTimestamp(unixMilliseconds: 1_795_928_400_250)
        event.cause = "uuid-\"1\""
        event.subscription = Subscription.with {
            $0.status = .active
            $0.entitled = true
            $0.entitlements = ["pro"]
        }
        let body = SubscriptionEventBody.json(event)
        #expect(body == SubscriptionEventBody.json(event))
        var object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let subscription = try #require(object.removeValue(forKey: "subscription") as? [String: Any])
        #expect(subscription["status"] as? String == "SUBSCRIPTION_STATUS_ACTIVE")
        #expect(subscription["entitled"] as? Bool == true)
        #expect(subscription["entitlements"] as? [String] == ["pro"])
        #expect(
            object as? [String: String] == [
                "eventId": "7d1c3e52", "app": "example", "environment": "ENVIRONMENT_SANDBOX",
                "originalTransactionId": "2000000000000001", "sequence": "3", "type": "SUBSCRIPTION_EVENT_TYPE_RENEWAL",
                "previousStatus": "SUBSCRIPTION_STATUS_ACTIVE", "occurredAt": "2026-11-29T05:00:00.250Z",
                "cause": "uuid-\"1\"",
            ])
        // Defaults are left out.
        #expect(SubscriptionEventBody.json(SubscriptionEvent()) == Array("{}".utf8))
    }

    @Test func rfc3339InstantsAreRead() {
        #expect(RFC3339.milliseconds("2026-11-29T05:00:00.250Z") == 1_795_928_400_250)
        #expect(RFC3339.milliseconds("2026-11-29T06:00:00+01:00") == 1_795_928_400_000)
        #expect(RFC3339.milliseconds("2026-11-29T05:00:00.123456Z") == 1_795_928_400_123)
        #expect(RFC3339.milliseconds("2026-11-29") == nil)
        #expect(RFC3339.milliseconds("2h") == nil)
    }

    @Test func aSinkIsLabelledByItsURLWithoutCredentialsOrQuery() {
        #expect(
            TeamWebhook.label(of: "https://user:pw@team.example:8443/hooks?token=x#f")
                == "https://team.example:8443/hooks")
        #expect(TeamWebhook.label(of: "http://[::1]:80/a@b") == "http://[::1]:80/a@b")
        #expect(TeamWebhook.urlProblem("https://team.example/hooks") == nil)
        #expect(TeamWebhook.urlProblem("http://[::1]:8080/x") == nil)
        #expect(TeamWebhook.urlProblem("https://user@/x") != nil)
        #expect(TeamWebhook.urlProblem("https://h:99999/") != nil)
        #expect(TeamWebhook.eventType(named: "renewal") == .renewal)
        #expect(TeamWebhook.eventType(named: "SUBSCRIPTION_EVENT_TYPE_REFUND_REVERSED") == .refundReversed)
        #expect(TeamWebhook.eventType(named: "UNSPECIFIED") == nil)
    }

    @Test func theRelayBodyIsWhatApplePosts() {
        #expect(NotificationRelay.body(signedPayload: "a.b.c") == Array("{\"signedPayload\":\"a.b.c\"}".utf8))
    }
}
