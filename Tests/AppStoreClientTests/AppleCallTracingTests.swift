import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Configuration
import GatewayFoundation
import HTTPServer
import Testing

/// The CLIENT span of an Apple call: a child of the call's span, its id the one Apple sees in `traceparent`,
/// retries as events; no span without a sampled trace.
@Suite struct AppleCallTracingTests {
    final class CollectingTracer: Tracer {
        let sampled: Bool
        let spans = Lock<[SpanRecord]>([])
        init(sampled: Bool = true) { self.sampled = sampled }
        func isSampled(_ trace: TraceContext) -> Bool { sampled }
        func record(_ span: SpanRecord) { spans.withLock { $0.append(span) } }
        func unixNanos() -> UInt64 { 1_700_000_000_000_000_000 }
    }

    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    func call(_ fixture: UpstreamFixture, tracer: CollectingTracer, trace: TraceContext?) async throws {
        let signers: [String: any ES256Signer] = fixture.keys.compactMapValues { AppKeySigner(key: $0) }
        let client = try AppStoreAPIClient(
            configuration: fixture.configuration, http: fixture.http, signers: signers, tracer: tracer)
        let app = try client.apps.app(named: "example")
        let result = await TraceContext.$current.withValue(trace) { () async -> Result<AppleResponse, GatewayError> in
            do throws(GatewayError) {
                return .success(
                    try await client.call(
                        .getTransactionHistory, path: "/inApps/v2/history/2000000123", app: app,
                        deadline: deadline(in: .seconds(20))))
            } catch {
                return .failure(error)
            }
        }
        _ = try result.get()
    }

    @Test func aRetriedCallIsOneSpanWithARetryEventUnderTheCallsSpan() async throws {
        let fixture = try UpstreamFixture { _, number in
            number == 1 ? AppleJSON.error(5_000_000, status: 500) : AppleJSON.history([])
        }
        let tracer = CollectingTracer()
        let trace = TraceContext(traceparent: parent, tracestate: nil)
        try await call(fixture, tracer: tracer, trace: trace)

        let spans = tracer.spans.withLock { $0 }
        #expect(spans.count == 1)
        let span = try #require(spans.first)
        #expect(span.kind == .client && span.name == "GET getTransactionHistory")
        #expect(span.parentSpanID == trace.spanIDValue && !span.parentIsRemote)
        #expect(span.traceIDHigh == trace.traceIDValue.high && span.traceIDLow == trace.traceIDValue.low)
        let attributes = Dictionary(uniqueKeysWithValues: span.attributes.map { ($0.key, $0.value) })
        #expect(attributes["http.request.method"] == .string("GET"))
        #expect(attributes["server.address"] == .string("127.0.0.1"))
        #expect(attributes["appstore.endpoint"] == .string("getTransactionHistory"))
        #expect(attributes["http.response.status_code"] == .int(200))
        #expect(attributes["appstore.error_code"] == .int(5_000_000))  // the first attempt's
        #expect(attributes["http.request.resend_count"] == .int(1))
        #expect(span.events.map(\.name) == ["retry"] && span.status == .unset)
        // Both attempts carried the span's id as Apple's parent.
        let parents = fixture.fake.requests.compactMap { $0.header("traceparent")?.split(separator: "-")[2] }
        #expect(parents.count == 2 && Set(parents) == [Substring(String(span.spanID, radix: 16).leftPadded(16))])
    }

    @Test func noTraceOrAnUnsampledOneMakesNoSpan() async throws {
        let fixture = try UpstreamFixture()
        let unsampled = CollectingTracer(sampled: false)
        try await call(fixture, tracer: unsampled, trace: TraceContext(traceparent: parent, tracestate: nil))
        let untraced = CollectingTracer()
        try await call(fixture, tracer: untraced, trace: nil)
        #expect(unsampled.spans.withLock { $0 }.isEmpty && untraced.spans.withLock { $0 }.isEmpty)
        // Apple still gets the caller's trace when it is not recorded here.
        #expect(
            fixture.fake.requests.first?.header("traceparent")?.contains("4bf92f3577b34da6a3ce929d0e0e4736") == true)
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
