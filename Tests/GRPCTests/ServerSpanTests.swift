import GatewayFoundation
import Metrics
import Testing

@testable import GRPC

/// The server span of a call: RPC conventions, the caller's span as parent, the call's span id as its own,
/// nothing for an unsampled call; the access log still sees every call.
@Suite struct ServerSpanTests {
    final class CollectingTracer: Tracer {
        let sampled: Bool
        let spans = Lock<[SpanRecord]>([])
        init(sampled: Bool) { self.sampled = sampled }
        func isSampled(_ trace: TraceContext) -> Bool { sampled }
        func record(_ span: SpanRecord) { spans.withLock { $0.append(span) } }
        func unixNanos() -> UInt64 { 2_000_000_000_000_000_000 }
    }

    final class CountingLog: AccessLog, AccessLogWriter {
        let finished = Lock(0)
        func writer(for method: RPCMethodLabels, path: String?, loop: Int) -> (any AccessLogWriter)? { self }
        func write(
            path: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
            annotations: CallAnnotations
        ) { finished.withLock { $0 += 1 } }
    }

    /// The recorder the server makes for `method` on loop 0, registered as a unary method when it is a path.
    func recorder(_ method: String, accessLog: (any AccessLog)? = nil, tracer: any Tracer) -> RPCRecorder {
        let metrics = RPCMetrics(registry: MetricsRegistry())
        metrics.register(methods: [method: "unary"])
        return metrics.recorder(method: method, loop: 0, accessLog: accessLog, tracer: tracer)
    }

    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func aCallBecomesAServerSpanUnderTheCallersSpan() throws {
        let tracer = CollectingTracer(sampled: true)
        let inner = CountingLog()
        let path = "/appstore.gateway.v1.AppStoreGateway/GetHistory"
        let trace = TraceContext(traceparent: parent, tracestate: nil)
        let annotations = CallAnnotations(identity: .init(requestID: "r-1", trace: trace, caller: "billing"))
        annotations.note("app", "example")
        recorder(path, accessLog: inner, tracer: tracer).finished(
            path: path, status: .unavailable, seconds: 0.25, metadata: [], annotations: annotations)

        #expect(inner.finished.withLock { $0 } == 1)
        let span = try #require(tracer.spans.withLock { $0 }.first)
        #expect(span.name == "appstore.gateway.v1.AppStoreGateway/GetHistory" && span.kind == .server)
        #expect(span.traceIDHigh == 0x4BF9_2F35_77B3_4DA6 && span.traceIDLow == 0xA3CE_929D_0E0E_4736)
        #expect(span.parentSpanID == 0x00F0_67AA_0BA9_02B7 && span.parentIsRemote)
        #expect(span.spanID == trace.spanIDValue)
        #expect(span.endUnixNanos - span.startUnixNanos == 250_000_000)
        let attributes = Dictionary(uniqueKeysWithValues: span.attributes.map { ($0.key, $0.value) })
        #expect(attributes["rpc.system"] == .string("grpc"))
        #expect(attributes["rpc.service"] == .string("appstore.gateway.v1.AppStoreGateway"))
        #expect(attributes["rpc.method"] == .string("GetHistory"))
        #expect(attributes["rpc.grpc.status_code"] == .int(14))
        #expect(attributes["enduser.id"] == .string("billing"))
        #expect(attributes["appstore_gateway.app"] == .string("example"))
        #expect(span.status == .error("UNAVAILABLE"))
    }

    @Test func aCallersErrorLeavesTheStatusUnset() throws {
        let tracer = CollectingTracer(sampled: true)
        let trace = TraceContext(traceparent: nil, tracestate: nil)
        recorder("not a path", tracer: tracer).finished(
            path: "not a path", status: .invalidArgument, seconds: 0, metadata: [],
            annotations: CallAnnotations(identity: .init(requestID: nil, trace: trace, caller: nil)))
        let span = try #require(tracer.spans.withLock { $0 }.first)
        #expect(span.status == .unset && span.parentSpanID == 0 && !span.parentIsRemote)
        #expect(span.name == "not a path" && !span.attributes.contains { $0.key == "enduser.id" })
    }

    @Test func anUnsampledCallMakesNoSpan() {
        let tracer = CollectingTracer(sampled: false)
        let inner = CountingLog()
        recorder("/a.B/C", accessLog: inner, tracer: tracer).finished(
            path: "/a.B/C", status: .ok, seconds: 0.1, metadata: [],
            annotations: CallAnnotations(
                identity: .init(requestID: nil, trace: TraceContext(traceparent: parent, tracestate: nil), caller: nil)
            ))
        #expect(tracer.spans.withLock { $0 }.isEmpty && inner.finished.withLock { $0 } == 1)
    }
}
