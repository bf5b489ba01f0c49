import GatewayFoundation
import Testing

/// W3C traceparent: continued when valid, a new trace when not (never an error); child spans for Apple.
@Suite struct TraceContextTests {
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    let span = "00f067aa0ba902b7"

    @Test func aValidParentIsContinued() {
        let context = TraceContext(traceparent: "00-\(trace)-\(span)-01", tracestate: "a=1,b=2")
        #expect(context.traceID == trace && context.parentSpanID == span && context.flags == "01")
        #expect(context.spanID != span && context.spanID.count == 16)
        #expect(context.traceState == "a=1,b=2")
        let headers = context.outgoingHeaders()
        let parts = headers[0].1.split(separator: "-").map(String.init)
        #expect(headers[0].0 == "traceparent" && parts[0] == "00" && parts[1] == trace && parts[3] == "01")
        #expect(parts[2] != context.spanID && parts[2] != span)
        #expect(headers.count == 2 && headers[1] == ("tracestate", "a=1,b=2"))
        // A later version may carry more fields after a dash.
        #expect(TraceContext(traceparent: "01-\(trace)-\(span)-00-extra", tracestate: nil).traceID == trace)
    }

    @Test(
        arguments: [
            nil, "", "garbage", "00-\(String(repeating: "0", count: 32))-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ] as [String?])
    func aMalformedParentStartsANewTrace(traceparent: String?) {
        let context = TraceContext(traceparent: traceparent, tracestate: "dropped=1")
        #expect(context.traceID != trace && context.traceID.count == 32 && context.traceID.contains { $0 != "0" })
        #expect(context.parentSpanID == nil && context.traceState == nil)
    }

    /// The caller's span as a link from another trace (the webhook's): ids, flags and tracestate as sent;
    /// none for a trace that started here.
    @Test func theCallersSpanAsALink() throws {
        let context = TraceContext(traceparent: "00-\(trace)-\(span)-00", tracestate: "a=1")
        let link = try #require(context.callerSpanLink)
        #expect(link.traceIDHigh == 0x4BF9_2F35_77B3_4DA6 && link.traceIDLow == 0xA3CE_929D_0E0E_4736)
        #expect(link.spanID == 0x00F0_67AA_0BA9_02B7 && link.traceFlags == 0 && link.isRemote)
        #expect(link.traceState == "a=1")
        #expect(TraceContext(traceparent: nil, tracestate: "a=1").callerSpanLink == nil)
        #expect(TraceContext(traceparent: "garbage", tracestate: nil).callerSpanLink == nil)
    }

    /// Ids and flags are formatted back digit for digit, whatever the digits (the formatter works eight at a
    /// time: every nibble value in every position, and random ones).
    @Test func idsAndFlagsAreFormattedBackExactly() {
        var random = SystemRandomNumberGenerator()
        func hex(_ value: UInt64, _ digits: Int) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: digits - text.count) + text
        }
        // 0x0123456789abcdef rotated by every nibble: each digit value lands in each of the 16 positions.
        let digits: UInt64 = 0x0123_4567_89ab_cdef
        var values: [UInt64] = (0..<16).map { digits << (4 * $0) | digits >> (64 - 4 * $0) }
        values += [1, .max, 0xa0a0_a0a0_0909_0909]
        for _ in 0..<200 { values.append(random.next() | 1) }
        for (index, value) in values.enumerated() {
            let high = values[(index + 1) % values.count]
            let flags = UInt8(truncatingIfNeeded: value >> 7)
            let parent = "00-\(hex(high, 16))\(hex(value, 16))-\(hex(value, 16))-\(hex(UInt64(flags), 2))"
            let context = TraceContext(traceparent: parent, tracestate: nil)
            #expect(context.traceID == hex(high, 16) + hex(value, 16))
            #expect(context.parentSpanID == hex(value, 16))
            #expect(context.flags == hex(UInt64(flags), 2))
        }
    }

    @Test func requestIDsAreBoundedTokens() {
        #expect(RequestID.accepted("abc-123") == "abc-123")
        #expect(RequestID.accepted("") == nil)
        #expect(RequestID.accepted("with space") == nil)
        #expect(RequestID.accepted(String(repeating: "a", count: 129)) == nil)
        let context = TraceContext(traceparent: nil, tracestate: nil)
        #expect(RequestID.generated(for: context).contains(context.spanID))
    }
}

/// The numbers behind a trace context, for span exporters, and outgoing headers naming a given child span.
@Suite struct TraceContextValueTests {
    @Test func theIdsAsNumbers() {
        let context = TraceContext(
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", tracestate: "k=v")
        #expect(context.traceIDValue == (0x4BF9_2F35_77B3_4DA6, 0xA3CE_929D_0E0E_4736))
        #expect(context.parentSpanIDValue == 0x00F0_67AA_0BA9_02B7 && !context.callerSampled)
        #expect(
            context.flagsValue == 0
                && String(context.spanIDValue, radix: 16) == String(context.spanID.drop { $0 == "0" }))
        let root = TraceContext(traceparent: nil, tracestate: nil)
        #expect(root.parentSpanIDValue == nil && root.callerSampled)
    }

    @Test func outgoingHeadersWithAGivenChildSpan() {
        let context = TraceContext(
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "k=v")
        let headers = context.outgoingHeaders(childSpan: 0xAB)
        #expect(headers.count == 2)
        #expect(headers[0] == ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000ab-01"))
        #expect(headers[1] == ("tracestate", "k=v"))
        var random = SystemRandomNumberGenerator()
        #expect(TraceContext.newSpanID(&random) != 0)
    }
}
