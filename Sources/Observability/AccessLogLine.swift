import GatewayCore
import Synchronization

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
        var requestID: String
        /// The call's annotations (app, trace ids, Apple's request id…), any order.
        var annotations: [(name: String, value: String)]
    }

    let label: String
    let redaction: SecretRedaction
    /// Which annotation names are secret-looking: the names are the code's own, so the answers are few
    /// and worth keeping (at most `SecretNames.limit` of them).
    private let secretNames = SecretNames()

    init(label: String, redaction: SecretRedaction) {
        self.label = label
        self.redaction = redaction
    }

    /// The line for `fields` at `time`, newline included, appended to `out`.
    func append(_ fields: Fields, at time: WallTime, to out: inout [UInt8]) {
        out.append(contentsOf: #"{"timestamp":""#.utf8)
        Self.appendTimestamp(time, to: &out)
        out.append(contentsOf: #"","level":"info","label":"#.utf8)
        JSONString.append(label, to: &out)
        out.append(contentsOf: #","message":"rpc","source":"Observability""#.utf8)

        // The call's own fields and its annotations, in key order; an annotation of the same name wins
        // (the request id the server chose is an annotation), as it does in a merged metadata dictionary.
        let annotations = fields.annotations.sorted { $0.name < $1.name }
        var next = 0
        /// `,"key":` — an annotation named like one of the line's own fields goes under `metadata.`.
        func member(_ key: String, annotation: Bool = false) {
            out.append(UInt8(ascii: ","))
            JSONString.append(annotation && Self.reservedNames.contains(key) ? "metadata.\(key)" : key, to: &out)
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
                member(name, annotation: true)
                JSONString.append(secretNames.isSecret(name, redaction) ? SecretRedaction.replacement : value, to: &out)
            }
            return replaced
        }
        if !writeAnnotations(through: "duration_ms") {
            member("duration_ms")
            Self.appendNumber(fields.durationMilliseconds, to: &out)
        }
        if !writeAnnotations(through: "grpc_code") {
            member("grpc_code")
            Self.appendInteger(Int(fields.status.rawValue), to: &out)
        }
        for (key, value) in [
            ("grpc_method", fields.grpcMethod), ("grpc_service", fields.service),
            ("method", fields.method), ("request_id", fields.requestID),
            ("status", fields.status.description),
        ] where !writeAnnotations(through: key) {
            member(key)
            JSONString.append(value, to: &out)
        }
        _ = writeAnnotations(through: "\u{10FFFF}")
        out.append(contentsOf: "}\n".utf8)
    }

    /// Keys of the line's own fields: metadata under these names is written as `metadata.<key>`.
    static let reservedNames = JSONLogHandler.fixedFields

    /// RFC 3339 in UTC with milliseconds (`2026-11-22T05:54:27.123Z`), as `JSONText.timestamp`.
    static func appendTimestamp(_ time: WallTime, to out: inout [UInt8]) {
        let millis = time.millisecondsSince1970
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = JSONText.civilDate(daysSince1970: days)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = max(0, value)
            while divisor > 0 {
                out.append(0x30 + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(min(max(year, 0), 9999)), 4)
        out.append(UInt8(ascii: "-"))
        digits(month, 2)
        out.append(UInt8(ascii: "-"))
        digits(day, 2)
        out.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        out.append(UInt8(ascii: "."))
        digits(Int(millis - seconds * 1000), 3)
        out.append(UInt8(ascii: "Z"))
    }

    static func appendInteger(_ value: Int, to out: inout [UInt8]) {
        out.append(contentsOf: String(value).utf8)
    }

    /// A finite number as JSON (Swift's shortest round-trip form); anything else as 0.
    static func appendNumber(_ value: Double, to out: inout [UInt8]) {
        out.append(contentsOf: (value.isFinite ? "\(value)" : "0").utf8)
    }
}

/// A bounded memo of `SecretRedaction.isSecret` by key.
private final class SecretNames: Sendable {
    static let limit = 256
    private let known = Mutex<[String: Bool]>([:])

    func isSecret(_ name: String, _ redaction: SecretRedaction) -> Bool {
        if let answer = known.withLock({ $0[name] }) { return answer }
        let answer = redaction.isSecret(key: name)
        known.withLock { if $0.count < Self.limit { $0[name] = answer } }
        return answer
    }
}
