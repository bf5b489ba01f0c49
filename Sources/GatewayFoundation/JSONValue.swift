import Foundation

/// A parsed JSON value (`JSONParser`), kept exact enough for App Store data (int64 milliseconds and ids).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses `data` as one JSON object (RFC 8259), or nil when it is not valid JSON or not an object.
    public static func object(from data: Data) -> [String: JSONValue]? {
        let value = data.withUnsafeBytes { raw in
            JSONParser.parseDocument(raw.assumingMemoryBound(to: UInt8.self))
        }
        guard case .object(let object)? = value else { return nil }
        return object
    }

    /// Parses `bytes` as one JSON object (RFC 8259), or nil when it is not valid JSON or not an object.
    public static func object(from bytes: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let object)? = bytes.withUnsafeBufferPointer(JSONParser.parseDocument) else { return nil }
        return object
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// Integers, and doubles that hold an exact integer (some encoders write `1.7e12`).
    public var int64: Int64? {
        switch self {
        case .integer(let value): return value
        case .number(let value) where value.rounded() == value && abs(value) < 9.0e18: return Int64(value)
        default: return nil
        }
    }

    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }
}

extension JSONValue {
    /// Compact JSON text (object keys sorted), for sub-objects the protos carry as JSON strings.
    public var jsonText: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .integer(let value): return String(value)
        case .number(let value): return value.isFinite ? "\(value)" : "null"
        case .string(let value): return Self.quoted(value)
        case .array(let values): return "[" + values.map(\.jsonText).joined(separator: ",") + "]"
        case .object(let members):
            return "{"
                + members.sorted { $0.key < $1.key }.map { Self.quoted($0.key) + ":" + $0.value.jsonText }
                .joined(separator: ",") + "}"
        }
    }

    private static func quoted(_ text: String) -> String { JSONString.quoted(text) }
}
