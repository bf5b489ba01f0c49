/// A W3C Trace Context (traceparent/tracestate) for one call through the gateway.
///
/// The gateway is one span of the caller's trace: it keeps the caller's trace id, takes a span id of its
/// own, and gives each Apple request a child span id. A missing or malformed `traceparent` starts a new
/// trace, as the W3C recommendation says; it is never an error.
public struct TraceContext: Sendable, Hashable {
    /// The context of the call the current task serves (bound by the gRPC server), if any.
    @TaskLocal public static var current: TraceContext?

    // Kept as numbers: a call that never logs or calls Apple never formats them.
    @usableFromInline let traceHigh: UInt64
    @usableFromInline let traceLow: UInt64
    @usableFromInline let span: UInt64
    private let parentSpan: UInt64?
    private let flagBits: UInt8
    /// The caller's `tracestate`, forwarded unchanged when it is plausible (≤ 512 characters, printable).
    public let traceState: String?

    /// 32 lowercase hex digits, not all zero.
    public var traceID: String { Self.hexString(traceHigh, traceLow) }
    /// The gateway's own span: 16 lowercase hex digits, not all zero.
    public var spanID: String { Self.hexString(span) }
    /// The caller's span (our parent), nil when the trace started here.
    public var parentSpanID: String? { parentSpan.map { Self.hexString($0) } }
    /// Trace flags (2 hex digits; 01 = sampled).
    public var flags: String { Self.hexString(UInt64(flagBits), digits: 2) }

    /// The trace id as two numbers, most significant half first (span exporters write its 16 bytes).
    public var traceIDValue: (high: UInt64, low: UInt64) { (traceHigh, traceLow) }
    /// The gateway's own span id as a number.
    public var spanIDValue: UInt64 { span }
    /// The caller's span id as a number, nil when the trace started here.
    public var parentSpanIDValue: UInt64? { parentSpan }
    /// Whether the caller's flags say it samples this trace (a trace started here says so too).
    public var callerSampled: Bool { flagBits & 1 == 1 }
    /// The trace flags as a number (8 bits; bit 0 = sampled).
    public var flagsValue: UInt8 { flagBits }

    /// The context for a call that brought `traceparent` and `tracestate` (either may be nil or garbage).
    public init<R: RandomNumberGenerator>(traceparent: String?, tracestate: String?, random: inout R) {
        span = Self.nonZero(&random)
        if let parent = traceparent.flatMap(Self.parse) {
            (traceHigh, traceLow) = (parent.high, parent.low)
            parentSpan = parent.span
            flagBits = parent.flags
            traceState = tracestate.flatMap(Self.plausibleState)
        } else {
            traceHigh = random.next()
            traceLow = Self.nonZero(&random)
            parentSpan = nil
            flagBits = 1
            traceState = nil  // tracestate without a valid traceparent is discarded (W3C)
        }
    }

    /// The context for a call, with ids from `FastRandom` (unique, not secret).
    public init(traceparent: String?, tracestate: String?) {
        var random = FastRandom()
        self.init(traceparent: traceparent, tracestate: tracestate, random: &random)
    }

    /// The caller's span as a link from another trace, nil when the trace started here: how a request whose
    /// `traceparent` is not trusted as a parent (one from the internet) still points at its sender's trace.
    public var callerSpanLink: SpanRecord.Link? {
        guard let parentSpan else { return nil }
        return SpanRecord.Link(
            traceIDHigh: traceHigh, traceIDLow: traceLow, spanID: parentSpan, traceState: traceState,
            traceFlags: flagBits, isRemote: true)
    }

    /// The `traceparent` of an outgoing request: same trace, a new child span of the gateway's span.
    public func childTraceparent<R: RandomNumberGenerator>(random: inout R) -> String {
        "00-\(traceID)-\(Self.hexString(Self.nonZero(&random)))-\(flags)"
    }

    /// The headers for an outgoing request (traceparent, and tracestate when the caller sent one).
    public func outgoingHeaders() -> [(String, String)] {
        var random = FastRandom()
        return outgoingHeaders(childSpan: Self.newSpanID(&random))
    }

    /// The headers for an outgoing request whose span (the `traceparent`'s parent id) is `childSpan`, a
    /// span the gateway records itself (nonzero, from `newSpanID`).
    public func outgoingHeaders(childSpan: UInt64) -> [(String, String)] {
        var headers = [("traceparent", "00-\(traceID)-\(Self.hexString(childSpan))-\(flags)")]
        if let traceState { headers.append(("tracestate", traceState)) }
        return headers
    }

    /// A fresh span id: random, never zero.
    public static func newSpanID<R: RandomNumberGenerator>(_ random: inout R) -> UInt64 { nonZero(&random) }

    /// Runs `body` with the 32 hex digits of the trace id, made on the stack (inlinable: specialised for
    /// each caller's result, as the per-call log and header writers need).
    @inlinable
    public func withTraceID<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
            Self.writeHex(traceHigh, digits: 16, into: buffer.baseAddress!)
            Self.writeHex(traceLow, digits: 16, into: buffer.baseAddress! + 16)
            return body(UnsafeBufferPointer(buffer))
        }
    }

    /// Runs `body` with the 16 hex digits of the span id, made on the stack.
    @inlinable
    public func withSpanID<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { buffer in
            Self.writeHex(span, digits: 16, into: buffer.baseAddress!)
            return body(UnsafeBufferPointer(buffer))
        }
    }

    /// Writes the id `RequestID.generated(for:)` names into `buffer` (`RequestID.generatedLength` bytes):
    /// "gw-", the low half of the trace id, "-", the span id.
    @usableFromInline
    func writeRequestID(into buffer: UnsafeMutableBufferPointer<UInt8>) {
        precondition(buffer.count >= RequestID.generatedLength)
        buffer[0] = UInt8(ascii: "g")
        buffer[1] = UInt8(ascii: "w")
        buffer[2] = UInt8(ascii: "-")
        Self.writeHex(traceLow, digits: 16, into: buffer.baseAddress! + 3)
        buffer[19] = UInt8(ascii: "-")
        Self.writeHex(span, digits: 16, into: buffer.baseAddress! + 20)
    }

    /// version-traceid-parentid-flags. Version 00 is exactly 55 characters; a later version may append
    /// fields after a dash (W3C: parse what is known); version ff is invalid.
    static func parse(_ text: String) -> (high: UInt64, low: UInt64, span: UInt64, flags: UInt8)? {
        var text = text
        return text.withUTF8 { bytes in
            guard bytes.count >= 55, bytes[2] == 0x2D, bytes[35] == 0x2D, bytes[52] == 0x2D,
                let version = hexValue(bytes, 0, 2), let high = hexValue(bytes, 3, 16),
                let low = hexValue(bytes, 19, 16), let span = hexValue(bytes, 36, 16),
                let flags = hexValue(bytes, 53, 2), version != 0xff
            else { return nil }
            if version == 0 {
                guard bytes.count == 55 else { return nil }
            } else if bytes.count > 55, bytes[55] != 0x2D {
                return nil
            }
            guard high | low != 0, span != 0 else { return nil }
            return (high, low, span, UInt8(flags))
        }
    }

    /// `count` (≤ 16) lowercase hex digits at `offset`, or nil.
    private static func hexValue(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: Int, _ count: Int) -> UInt64? {
        var value: UInt64 = 0
        for byte in bytes[offset..<offset + count] {
            switch byte {
            case 0x30...0x39: value = value << 4 | UInt64(byte - 0x30)
            case 0x61...0x66: value = value << 4 | UInt64(byte - 0x61 + 10)
            default: return nil
            }
        }
        return value
    }

    private static func plausibleState(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= 512, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            return nil
        }
        return text
    }

    private static func nonZero<R: RandomNumberGenerator>(_ random: inout R) -> UInt64 {
        var value: UInt64 = 0
        while value == 0 { value = random.next() }
        return value
    }

    /// Writes the low `digits` (even, ≤ 16) lowercase hex digits of `value`, eight at a time without a table.
    @usableFromInline
    static func writeHex(_ value: UInt64, digits: Int, into target: UnsafeMutablePointer<UInt8>) {
        let raw = UnsafeMutableRawPointer(target)
        if digits == 16 {  // every id: two unaligned 8-byte stores, most significant digit first
            raw.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value >> 32)).bigEndian, as: UInt64.self)
            raw.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value)).bigEndian, toByteOffset: 8, as: UInt64.self)
            return
        }
        var remaining = value
        for index in stride(from: digits - 1, through: 0, by: -1) {
            let digit = UInt8(truncatingIfNeeded: remaining & 0xF)
            target[index] = digit < 10 ? 0x30 + digit : 0x57 + digit
            remaining >>= 4
        }
    }

    /// The 8 hex digits of `value` as ASCII, one per byte: the lowest byte holds the lowest digit.
    @usableFromInline
    static func hexDigits(_ value: UInt32) -> UInt64 {
        // Spread the 8 nibbles over 8 bytes: 16-bit halves, then bytes, then nibbles.
        var spread = UInt64(value)
        spread = (spread | spread << 16) & 0x0000_FFFF_0000_FFFF
        spread = (spread | spread << 8) & 0x00FF_00FF_00FF_00FF
        spread = (spread | spread << 4) & 0x0F0F_0F0F_0F0F_0F0F
        // A byte of 10 or more carries into bit 4 when 6 is added: those get 'a' − '0' − 10 = 39 more.
        let letters = ((spread &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return spread &+ 0x3030_3030_3030_3030 &+ letters &* 39
    }

    private static func hexString(_ values: UInt64..., digits: Int = 16) -> String {
        String(unsafeUninitializedCapacity: values.count * digits) { buffer in
            for (index, value) in values.enumerated() {
                writeHex(value, digits: digits, into: buffer.baseAddress! + index * digits)
            }
            return values.count * digits
        }
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

    /// The length of a generated id.
    public static let generatedLength = 36

    /// A fresh id: "gw-", the low half of the trace id, "-", the gateway's span id (unique enough, and it
    /// ties the id to the trace).
    public static func generated(for trace: TraceContext) -> String {
        String(unsafeUninitializedCapacity: generatedLength) { buffer in
            trace.writeRequestID(into: buffer)
            return generatedLength
        }
    }

    /// Runs `body` with the bytes of `generated(for: trace)`, made on the stack.
    @inlinable
    public static func withGenerated<Result>(
        for trace: TraceContext, _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: generatedLength) { buffer in
            trace.writeRequestID(into: buffer)
            return body(UnsafeBufferPointer(buffer))
        }
    }
}
