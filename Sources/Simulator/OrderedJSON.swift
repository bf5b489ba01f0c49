import Foundation
import GatewayFoundation

/// A JSON value whose objects keep their key order, so the simulator's bodies and JWS payloads are
/// byte-for-byte reproducible for one seed.
///
/// Not `indirect`: the arrays already hold nested values on the heap. A boxed case is referenced by a pointer
/// carrying the case's tag in its spare bits, which LeakSanitizer does not recognise as a pointer: it reported
/// every box of the simulator's dataset as leaked although the dataset held it.
package enum OrderedJSON: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    case bool(Bool)
    case array([OrderedJSON])
    case object([(String, OrderedJSON)])
    case null

    package static func == (lhs: OrderedJSON, rhs: OrderedJSON) -> Bool { lhs.encodedText == rhs.encodedText }
    package func hash(into hasher: inout Hasher) { hasher.combine(encodedText) }

    /// The compact JSON text.
    package var encodedText: String {
        var out = ""
        write(into: &out)
        return out
    }

    /// The compact JSON bytes.
    package var encoded: [UInt8] { Array(encodedText.utf8) }

    private func write(into out: inout String) {
        switch self {
        case .string(let text): Self.writeQuoted(text, into: &out)
        case .integer(let value): out += String(value)
        case .bool(let value): out += value ? "true" : "false"
        case .null: out += "null"
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                Self.writeQuoted(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    private static func writeQuoted(_ text: String, into out: inout String) {
        JSONString.append(text, to: &out)
    }
}

/// Builds a JSON object member list, skipping absent values.
struct JSONObjectBuilder {
    private(set) var members: [(String, OrderedJSON)] = []

    mutating func add(_ key: String, _ value: String?) {
        if let value { members.append((key, .string(value))) }
    }

    mutating func add(_ key: String, _ value: Int64?) {
        if let value { members.append((key, .integer(value))) }
    }

    mutating func add(_ key: String, _ value: Int?) {
        if let value { members.append((key, .integer(Int64(value)))) }
    }

    mutating func add(_ key: String, _ value: Bool?) {
        if let value { members.append((key, .bool(value))) }
    }

    mutating func add(_ key: String, _ value: OrderedJSON?) {
        if let value { members.append((key, value)) }
    }

    var object: OrderedJSON { .object(members) }
}
