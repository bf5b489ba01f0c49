import GRPC
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
        JSONText.appendTimestamp(time, to: &out)
        out.append(contentsOf: #"","level":"info","label":"#.utf8)
        JSONString.append(label, to: &out)
        out.append(contentsOf: #","message":"rpc","source":"Observability""#.utf8)

        // The call's own fields and its annotations, in key order; an annotation of the same name wins
        // (the request id the server chose is an annotation), as it does in a merged metadata dictionary.
        let annotations = fields.annotations.sorted { $0.name < $1.name }
        let secret = secretNames.secretMask(of: annotations, redaction)
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
                let isSecret = next - 1 < 64 ? secret & (1 << (next - 1)) != 0 : secretNames.isSecret(name, redaction)
                JSONString.append(isSecret ? SecretRedaction.replacement : value, to: &out)
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
        func stringMember(_ key: String, _ value: String) {
            guard !writeAnnotations(through: key) else { return }
            member(key)
            JSONString.append(value, to: &out)
        }
        stringMember("grpc_method", fields.grpcMethod)
        stringMember("grpc_service", fields.service)
        stringMember("method", fields.method)
        stringMember("request_id", fields.requestID)
        stringMember("status", fields.status.description)
        _ = writeAnnotations(through: "\u{10FFFF}")
        out.append(contentsOf: "}\n".utf8)
    }

    /// Keys of the line's own fields: metadata under these names is written as `metadata.<key>`.
    static let reservedNames = JSONLogHandler.fixedFields

    /// A decimal integer, digit by digit (no String).
    static func appendInteger(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for the 20 digits of any Int
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: buffer[index...])
        }
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
