import GatewayFoundation
import Testing

@testable import Tracing

/// The protobuf wire writer and OTLP's ExportTraceServiceRequest, read back field by field (the interop
/// test decodes the same bytes with opentelemetry-proto).
@Suite struct OTLPEncodingTests {
    @Test func wirePrimitives() {
        var writer = ProtobufWriter()
        writer.varintField(1, 300)
        writer.fixed64Field(2, 1)
        writer.fixed32Field(3, 0x0102_0304)
        writer.stringField(4, "hi")
        writer.varintField(5, 0)  // proto3: a default scalar is left out
        writer.varintField(6, 0, keepDefault: true)  // unless a oneof member
        writer.varintField(7, UInt64(bitPattern: -1))
        #expect(
            writer.bytes == [
                0x08, 0xAC, 0x02, 0x11, 1, 0, 0, 0, 0, 0, 0, 0, 0x1D, 4, 3, 2, 1, 0x22, 2, 0x68, 0x69, 0x30, 0,
                0x38, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,
            ])
        var nested = ProtobufWriter()
        nested.messageField(1) { $0.stringField(1, "a") }
        nested.messageField(2) { _ in }  // a set, empty message is still written
        #expect(nested.bytes == [0x0A, 3, 0x0A, 1, 0x61, 0x12, 0])
    }

    func sampleSpan() -> SpanRecord {
        var span = SpanRecord(
            traceIDHigh: 0x4BF9_2F35_77B3_4DA6, traceIDLow: 0xA3CE_929D_0E0E_4736, spanID: 0x0102_0304_0506_0708,
            parentSpanID: 0x00F0_67AA_0BA9_02B7, parentIsRemote: true, traceFlags: 1, name: "svc/Method",
            kind: .server, startUnixNanos: 1_700_000_000_000_000_000)
        span.endUnixNanos = 1_700_000_000_500_000_000
        span.set("rpc.system", "grpc")
        span.set("rpc.grpc.status_code", 0)
        span.set("flag", .bool(false))
        span.set("ratio", .double(0.5))
        span.events.append(
            SpanRecord.Event(
                name: "retry", timeUnixNanos: 1_700_000_000_100_000_000,
                attributes: [SpanRecord.Attribute("attempt", .int(1))]))
        span.status = .error("UNAVAILABLE")
        return span
    }

    @Test func aSpanInItsResourceAndScope() throws {
        let request = OTLPTraceRequest(
            resource: [SpanRecord.Attribute("service.name", .string("gw"))], scopeName: "appstore-gateway",
            scopeVersion: "1.0.0")
        let top = try #require(WireReader.fields(request.encode([sampleSpan()])))
        #expect(top.count == 1)
        let resourceSpans = try #require(top.first(1)?.message)
        let resource = try #require(resourceSpans.first(1)?.message)
        let serviceName = try #require(resource.first(1)?.message)
        #expect(serviceName.first(1)?.string == "service.name")
        #expect(serviceName.first(2)?.message?.first(1)?.string == "gw")
        let scopeSpans = try #require(resourceSpans.first(2)?.message)
        let scope = try #require(scopeSpans.first(1)?.message)
        #expect(scope.first(1)?.string == "appstore-gateway" && scope.first(2)?.string == "1.0.0")

        let span = try #require(scopeSpans.first(2)?.message)
        #expect(
            span.first(1)?.bytes == [
                0x4B, 0xF9, 0x2F, 0x35, 0x77, 0xB3, 0x4D, 0xA6, 0xA3, 0xCE, 0x92, 0x9D, 0x0E, 0x0E, 0x47, 0x36,
            ])
        #expect(span.first(2)?.bytes == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(span.first(4)?.bytes == [0x00, 0xF0, 0x67, 0xAA, 0x0B, 0xA9, 0x02, 0xB7])
        #expect(span.first(5)?.string == "svc/Method")
        #expect(span.first(6) == .varint(2))
        #expect(span.first(7) == .fixed64(1_700_000_000_000_000_000))
        #expect(span.first(8) == .fixed64(1_700_000_000_500_000_000))
        #expect(span.first(16) == .fixed32(0x301))  // sampled, parent known to be remote

        let attributes = span.values(9).compactMap(\.message)
        #expect(attributes.map { $0.first(1)?.string } == ["rpc.system", "rpc.grpc.status_code", "flag", "ratio"])
        #expect(attributes[0].first(2)?.message?.first(1)?.string == "grpc")
        // AnyValue is a oneof: zero and false are written.
        #expect(attributes[1].first(2)?.message?.first(3) == .varint(0))
        #expect(attributes[2].first(2)?.message?.first(2) == .varint(0))
        #expect(attributes[3].first(2)?.message?.first(4) == .fixed64(0.5.bitPattern))

        let event = try #require(span.first(11)?.message)
        #expect(event.first(1) == .fixed64(1_700_000_000_100_000_000) && event.first(2)?.string == "retry")
        #expect(event.first(3)?.message?.first(2)?.message?.first(3) == .varint(1))
        let status = try #require(span.first(15)?.message)
        #expect(status.first(2)?.string == "UNAVAILABLE" && status.first(3) == .varint(2))
    }

    @Test func aRootSpanHasNoParentAndALocalChildSaysSo() throws {
        var root = sampleSpan()
        root.parentSpanID = 0
        root.parentIsRemote = false
        var child = sampleSpan()
        child.parentIsRemote = false
        child.kind = .client
        child.status = .unset
        let request = OTLPTraceRequest(resource: [], scopeName: "s", scopeVersion: "")
        let spans = try #require(
            WireReader.fields(request.encode([root, child]))?.first(1)?.message?.first(2)?.message?.values(2))
        let decoded = spans.compactMap(\.message)
        #expect(decoded.count == 2)
        #expect(decoded[0].first(4) == nil && decoded[0].first(16) == .fixed32(1))
        #expect(decoded[1].first(16) == .fixed32(0x101) && decoded[1].first(6) == .varint(3))
        #expect(decoded[1].first(15) == nil)
    }

    /// Span.links (13): the linked span's trace and span ids, its tracestate, and its flags with "remote" known.
    @Test func linksCarryTheLinkedSpanItsStateAndWhetherItIsRemote() throws {
        var span = sampleSpan()
        span.links = [
            SpanRecord.Link(
                traceIDHigh: 0x0102_0304_0506_0708, traceIDLow: 0x090A_0B0C_0D0E_0F10, spanID: 0x00F0_67AA_0BA9_02B7,
                traceState: "vendor=opaque", traceFlags: 1, isRemote: true),
            SpanRecord.Link(
                traceIDHigh: 0, traceIDLow: 1, spanID: 2, traceState: nil, traceFlags: 0, isRemote: false),
        ]
        let request = OTLPTraceRequest(resource: [], scopeName: "s", scopeVersion: "")
        let decoded = try #require(
            WireReader.fields(request.encode([span]))?.first(1)?.message?.first(2)?.message?.first(2)?.message)
        let links = decoded.values(13).compactMap(\.message)
        #expect(links.count == 2)
        #expect(links[0].first(1)?.bytes == Array(1...16))
        #expect(links[0].first(2)?.bytes == [0x00, 0xF0, 0x67, 0xAA, 0x0B, 0xA9, 0x02, 0xB7])
        #expect(links[0].first(3)?.string == "vendor=opaque")
        #expect(links[0].first(6) == .fixed32(0x301))
        #expect(links[1].first(3) == nil && links[1].first(6) == .fixed32(0x100))
        // A span without links writes none.
        let plain = try #require(
            WireReader.fields(request.encode([sampleSpan()]))?.first(1)?.message?.first(2)?.message?.first(2)?.message)
        #expect(plain.first(13) == nil)
    }

    @Test func longStringsAreCutAtACharacterBoundary() throws {
        var request = OTLPTraceRequest(resource: [], scopeName: "s", scopeVersion: "")
        request.maxStringBytes = 4
        var span = sampleSpan()
        span.name = "abcé"  // é is two bytes: a cut at 4 would split it
        span.attributes = [SpanRecord.Attribute("k", .string(String(repeating: "x", count: 100_000)))]
        let decoded = try #require(
            WireReader.fields(request.encode([span]))?.first(1)?.message?.first(2)?.message?.first(2)?.message)
        #expect(decoded.first(5)?.string == "abc")
        #expect(decoded.first(9)?.message?.first(2)?.message?.first(1)?.string == "xxxx")
    }
}
