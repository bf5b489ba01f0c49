/// A W3C Trace Context (traceparent/tracestate) for one call through the gateway.
///
/// The gateway is one span of the caller's trace: it keeps the caller's trace id, takes a span id of its
/// own, and gives each Apple request a child span id. A missing or malformed `traceparent` starts a new
/// trace, as the W3C recommendation says; it is never an error.
public struct TraceContext: Sendable, Hashable {
    /// The context of the call the current task serves (bound by the gRPC server), if any.
    @TaskLocal public static var current: TraceContext?

    /// 32 lowercase hex digits, not all zero.
    public let traceID: String
    /// The gateway's own span: 16 lowercase hex digits, not all zero.
    public let spanID: String
    /// The caller's span (our parent), nil when the trace started here.
    public let parentSpanID: String?
    /// Trace flags (2 hex digits; 01 = sampled).
    public let flags: String
    /// The caller's `tracestate`, forwarded unchanged when it is plausible (≤ 512 characters, printable).
    public let traceState: String?

    /// The context for a call that brought `traceparent` and `tracestate` (either may be nil or garbage).
    public init<R: RandomNumberGenerator>(traceparent: String?, tracestate: String?, random: inout R) {
        spanID = Self.newSpanID(&random)
        if let parent = traceparent.flatMap(Self.parse) {
            traceID = parent.traceID
            parentSpanID = parent.spanID
            flags = parent.flags
            traceState = tracestate.flatMap(Self.plausibleState)
        } else {
            traceID = Self.hex(random.next(), random.next())
            parentSpanID = nil
            flags = "01"
            traceState = nil  // tracestate without a valid traceparent is discarded (W3C)
        }
    }

    /// The context for a call, with the system's random generator.
    public init(traceparent: String?, tracestate: String?) {
        var random = SystemRandomNumberGenerator()
        self.init(traceparent: traceparent, tracestate: tracestate, random: &random)
    }

    /// The `traceparent` of an outgoing request: same trace, a new child span of the gateway's span.
    public func childTraceparent<R: RandomNumberGenerator>(random: inout R) -> String {
        "00-\(traceID)-\(Self.newSpanID(&random))-\(flags)"
    }

    /// The headers for an outgoing request (traceparent, and tracestate when the caller sent one).
    public func outgoingHeaders() -> [(String, String)] {
        var random = SystemRandomNumberGenerator()
        var headers = [("traceparent", childTraceparent(random: &random))]
        if let traceState { headers.append(("tracestate", traceState)) }
        return headers
    }

    /// version-traceid-parentid-flags. Version 00 is exactly 55 characters; a later version may append
    /// fields after a dash (W3C: parse what is known); version ff is invalid.
    static func parse(_ text: String) -> (traceID: String, spanID: String, flags: String)? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 55, bytes[2] == 0x2D, bytes[35] == 0x2D, bytes[52] == 0x2D else { return nil }
        let version = String(decoding: bytes[0..<2], as: UTF8.self)
        let traceID = String(decoding: bytes[3..<35], as: UTF8.self)
        let spanID = String(decoding: bytes[36..<52], as: UTF8.self)
        let flags = String(decoding: bytes[53..<55], as: UTF8.self)
        guard [version, traceID, spanID, flags].allSatisfy(isLowerHex), version != "ff" else { return nil }
        if version == "00" {
            guard bytes.count == 55 else { return nil }
        } else if bytes.count > 55, bytes[55] != 0x2D {
            return nil
        }
        guard traceID.contains(where: { $0 != "0" }), spanID.contains(where: { $0 != "0" }) else { return nil }
        return (traceID, spanID, flags)
    }

    private static func plausibleState(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= 512, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            return nil
        }
        return text
    }

    private static func isLowerHex(_ text: String) -> Bool {
        text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    private static func newSpanID<R: RandomNumberGenerator>(_ random: inout R) -> String {
        var value: UInt64 = 0
        while value == 0 { value = random.next() }
        return hex(value)
    }

    private static func hex(_ values: UInt64...) -> String {
        var text = ""
        for value in values {
            let digits = String(value, radix: 16)
            text += String(repeating: "0", count: 16 - digits.count) + digits
        }
        return text
    }
}

/// The `x-request-id` of a call: the caller's when it is a sane token, else one made up here.
public enum RequestID {
    /// The caller's value when it is 1...128 printable ASCII characters without spaces; else nil.
    public static func accepted(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 128,
            value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return nil }
        return value
    }

    /// A fresh id (the gateway's span id is unique enough and ties the id to the trace).
    public static func generated(for trace: TraceContext) -> String { "gw-\(trace.traceID.suffix(16))-\(trace.spanID)" }
}
