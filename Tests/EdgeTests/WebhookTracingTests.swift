import GatewayFoundation
import HTTPServer
import Testing

@testable import Edge

/// The webhook's SERVER span: anyone on the internet may send a `traceparent`, so a delivery starts a trace
/// of its own and the sender's span is only a link from it, never its parent.
@Suite struct WebhookTracingTests {
    final class CollectingTracer: Tracer {
        let spans = Lock<[SpanRecord]>([])
        func isSampled(_ trace: TraceContext) -> Bool { true }
        func record(_ span: SpanRecord) { spans.withLock { $0.append(span) } }
        func unixNanos() -> UInt64 { 1_700_000_000_000_000_000 }
    }

    static let senderTrace: (high: UInt64, low: UInt64) = (0x4BF9_2F35_77B3_4DA6, 0xA3CE_929D_0E0E_4736)

    func delivery(_ headers: [(name: String, value: String)]) async throws -> SpanRecord {
        let tracer = CollectingTracer()
        var webhook = try NotificationWebhookTests.Fixture().webhook(store: FailingStore())
        webhook.tracer = tracer
        let answer = await webhook.handle(
            HTTPRequest(method: "POST", target: "/apple/notifications", headers: headers, body: Array("{}".utf8)))
        #expect(answer.status == 400)
        return try #require(tracer.spans.withLock { $0 }.first { $0.name == "POST webhook" })
    }

    @Test func theSendersContextIsALinkFromANewRootSpan() async throws {
        let span = try await delivery([
            ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"), ("tracestate", "vendor=x"),
        ])
        #expect(span.kind == .server)
        #expect(span.parentSpanID == 0 && !span.parentIsRemote)
        #expect((span.traceIDHigh, span.traceIDLow) != Self.senderTrace)
        // Sampled by the gateway's sampler, whatever the sender's flags said.
        #expect(span.traceFlags & 1 == 1)
        #expect(
            span.links == [
                SpanRecord.Link(
                    traceIDHigh: Self.senderTrace.high, traceIDLow: Self.senderTrace.low, spanID: 0x00F0_67AA_0BA9_02B7,
                    traceState: "vendor=x", traceFlags: 0, isRemote: true)
            ])
    }

    @Test(arguments: [nil, "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"] as [String?])
    func withoutAWellFormedTraceparentThereIsNoLink(traceparent: String?) async throws {
        let span = try await delivery(traceparent.map { [("traceparent", $0), ("tracestate", "vendor=x")] } ?? [])
        #expect(span.parentSpanID == 0 && span.links.isEmpty)
    }
}
