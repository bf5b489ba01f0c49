import GRPC
import GatewayFoundation

/// The access log's line for one RPC, in the same JSON shape as every other log line (fixed fields, then
/// the rest by key), built straight into bytes: no `Logger.Metadata` dictionary, no sorting of a merged
/// dictionary, no intermediate strings. Handed to `LogLineWriter`, it costs the loop a copy, not a write.
struct AccessLogLine {
    /// One RPC's facts.
    struct Fields {
        var method: String
        var service: String
        var grpcMethod: String
        var status: StatusCode
        var durationMilliseconds: Double
        /// The request id when the call has no identity (which then carries it).
        var requestID: String
        /// The call's identity: request id, trace and span ids, caller (written from their bytes).
        var identity: CallAnnotations.Identity? = nil
        /// What the handler noted (app, Apple's request id…), any order.
        var annotations: [(name: String, value: String)]
    }

    let label: String
    let redaction: SecretRedaction
    /// Which annotation names are secret-looking: the names are the code's own, so the answers are few
    /// and worth keeping (at most `SecretNames.limit` of them).
    private let secretNames = SecretNames()
    /// Whether each identity field's name (`caller`, `request_id`, `span_id`, `trace_id`) is secret-looking
    /// under `redaction` (none is, by default), decided once.
    private let identitySecret: (caller: Bool, requestID: Bool, spanID: Bool, traceID: Bool)
    /// Everything between the timestamp's digits and the first field, the label escaped: the same on
    /// every line, so written once here.
    private let afterTimestamp: [UInt8]

    init(label: String, redaction: SecretRedaction) {
        self.label = label
        self.redaction = redaction
        identitySecret = (
            redaction.isSecret(key: "caller"), redaction.isSecret(key: "request_id"),
            redaction.isSecret(key: "span_id"), redaction.isSecret(key: "trace_id")
        )
        var after = Array(#"","level":"info","label":"#.utf8)
        JSONString.append(label, to: &after)
        after.append(contentsOf: #","message":"rpc","source":"Observability""#.utf8)
        afterTimestamp = after
    }

    /// The `grpc_method`, `grpc_service` and `method` members of one method's lines, escaped once (a
    /// method's series keeps its own): `,"grpc_method":"…","grpc_service":"…","method":"…"`.
    struct MethodMembers: Sendable {
        let method: String
        let bytes: [UInt8]

        init(method: String, service: String, grpcMethod: String) {
            self.method = method
            var bytes: [UInt8] = []
            for (key, value) in [("grpc_method", grpcMethod), ("grpc_service", service), ("method", method)] {
                bytes.append(UInt8(ascii: ","))
                JSONString.append(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                JSONString.append(value, to: &bytes)
            }
            self.bytes = bytes
        }
    }

    /// The line for `fields` at `time`, newline included, appended to `out`. `methodMembers`, when given,
    /// are the members `fields` would make for its method, path and service (written at once when no
    /// annotation falls between them).
    func append(_ fields: Fields, at time: WallTime, methodMembers: MethodMembers? = nil, to out: inout [UInt8]) {
        out.append(contentsOf: #"{"timestamp":""#.utf8)
        JSONText.appendTimestamp(time, to: &out)
        out.append(contentsOf: afterTimestamp)

        // The line's own fields and the identity's, in key order, merged with the handler's annotations
        // (sorted); an annotation of the same name wins, as it does in a merged metadata dictionary.
        let annotations =
            fields.annotations.count > 1 ? fields.annotations.sorted { $0.name < $1.name } : fields.annotations
        let secret = annotations.isEmpty ? 0 : secretNames.secretMask(of: annotations, redaction)
        var next = 0
        /// `,"name":` for an annotation: one named like one of the line's own fields goes under `metadata.`.
        func annotationMember(_ name: String) {
            out.append(UInt8(ascii: ","))
            JSONString.append(JSONLogHandler.isFixedField(name) ? "metadata.\(name)" : name, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        /// Writes the annotations ordered before `key`; true when one is named `key` (and was written).
        func writeAnnotations(through key: String) -> Bool {
            var replaced = false
            while next < annotations.count && annotations[next].name <= key {
                let (name, value) = annotations[next]
                next += 1
                if name == key { replaced = true }
                if next < annotations.count && annotations[next].name == name { continue }  // the last one wins
                annotationMember(name)
                let isSecret = next - 1 < 64 ? secret & (1 << (next - 1)) != 0 : secretNames.isSecret(name, redaction)
                JSONString.append(isSecret ? SecretRedaction.replacement : value, to: &out)
            }
            return replaced
        }
        /// A field of the line, `member` being its `,"key":` (a key needing no escaping), unless an annotation
        /// named `key` was written instead.
        func field(_ member: StaticString, secret: Bool = false, _ write: (inout [UInt8]) -> Void) {
            let bytes = UnsafeBufferPointer(start: member.utf8Start, count: member.utf8CodeUnitCount)
            if next < annotations.count {
                let key = String(decoding: bytes[2..<(bytes.count - 2)], as: UTF8.self)
                if writeAnnotations(through: key) { return }
            }
            out.append(contentsOf: bytes)
            if secret { JSONString.append(SecretRedaction.replacement, to: &out) } else { write(&out) }
        }
        let identity = fields.identity
        if let identity {
            field(#","caller":"#, secret: identitySecret.caller) {
                JSONString.append(identity.caller ?? "-", to: &$0)
            }
        }
        field(#","duration_ms":"#) { Self.appendMilliseconds(fields.durationMilliseconds, to: &$0) }
        field(#","grpc_code":"#) { JSONText.appendInteger(Int(fields.status.rawValue), to: &$0) }
        // The method's three members at once, unless an annotation sorts among (or replaces) them.
        if let methodMembers, methodMembers.method == fields.method,
            next == annotations.count || annotations[next].name > "method"
        {
            out.append(contentsOf: methodMembers.bytes)
        } else {
            field(#","grpc_method":"#) { JSONString.append(fields.grpcMethod, to: &$0) }
            field(#","grpc_service":"#) { JSONString.append(fields.service, to: &$0) }
            field(#","method":"#) { JSONString.append(fields.method, to: &$0) }
        }
        if let identity {
            field(#","request_id":"#, secret: identitySecret.requestID) { out in
                if let requestID = identity.requestID {
                    JSONString.append(requestID, to: &out)
                } else {
                    RequestID.withGenerated(for: identity.trace) { Self.appendQuoted($0, to: &out) }  // hex and dashes
                }
            }
            field(#","span_id":"#, secret: identitySecret.spanID) { out in
                identity.trace.withSpanID { Self.appendQuoted($0, to: &out) }
            }
        } else {
            field(#","request_id":"#) { JSONString.append(fields.requestID, to: &$0) }
        }
        field(#","status":"#) { JSONString.append(fields.status.description, to: &$0) }
        if let identity {
            field(#","trace_id":"#, secret: identitySecret.traceID) { out in
                identity.trace.withTraceID { Self.appendQuoted($0, to: &out) }
            }
        }
        _ = writeAnnotations(through: "\u{10FFFF}")
        out.append(contentsOf: "}\n".utf8)
    }

    /// `bytes` (which need no escaping: hex digits and dashes) as a JSON string.
    private static func appendQuoted(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: bytes)
        out.append(UInt8(ascii: "\""))
    }

    /// `milliseconds` to the microsecond (`AccessLogLine.milliseconds(seconds:)`), the text Swift prints for that
    /// value (`3.591`, `12.5`, `3.0`: the shortest that reads back the same), written digit by digit without a
    /// String; anything not finite as 0.
    static func appendMilliseconds(_ milliseconds: Double, to out: inout [UInt8]) {
        let microseconds = (milliseconds * 1000).rounded()
        guard microseconds.isFinite, microseconds.magnitude < 1e15 else {
            out.append(contentsOf: (microseconds.isFinite ? "\(microseconds / 1000)" : "0").utf8)
            return
        }
        if microseconds < 0 { out.append(UInt8(ascii: "-")) }
        let magnitude = Int(microseconds.magnitude)
        JSONText.appendInteger(magnitude / 1000, to: &out)
        out.append(UInt8(ascii: "."))
        // The three decimals, trailing zeros dropped, at least one kept.
        var fraction = magnitude % 1000
        var digits = 3
        while digits > 1 && fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        var divisor = digits == 3 ? 100 : digits == 2 ? 10 : 1
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(fraction / divisor % 10))
            divisor /= 10
        }
    }

    /// A duration in milliseconds rounded to the microsecond, as both access log paths write it.
    static func milliseconds(seconds: Double) -> Double {
        (seconds * 1_000_000).rounded() / 1000
    }
}

/// A bounded memo of `SecretRedaction.isSecret` by key.
private final class SecretNames: Sendable {
    static let limit = 256
    private let known = Lock<[String: Bool]>([:])

    /// Bit i set when the name of `fields[i]` is secret-looking (the first 64), with one lock for the
    /// names seen before.
    func secretMask(of fields: [(name: String, value: String)], _ redaction: SecretRedaction) -> UInt64 {
        var mask: UInt64 = 0
        var unknown: [Int] = []
        known.withLock { known in
            for (index, field) in fields.prefix(64).enumerated() {
                if let answer = known[field.name] {
                    if answer { mask |= 1 << index }
                } else {
                    unknown.append(index)
                }
            }
        }
        for index in unknown where isSecret(fields[index].name, redaction) { mask |= 1 << index }
        return mask
    }

    func isSecret(_ name: String, _ redaction: SecretRedaction) -> Bool {
        if let answer = known.withLock({ $0[name] }) { return answer }
        let answer = redaction.isSecret(key: name)
        known.withLock { if $0.count < Self.limit { $0[name] = answer } }
        return answer
    }
}
