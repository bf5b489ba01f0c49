import GatewayFoundation

/// The nested JSON of an Advanced Commerce request (the body of a server call, the `request` claim of an in-app
/// signature): members in the order they are added, absent optional members left out, every string escaped by
/// `JSONString`, no whitespace.
indirect enum AdvancedCommerceJSON: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    case bool(Bool)
    case array([AdvancedCommerceJSON])
    case object([(String, AdvancedCommerceJSON)])

    /// The value as compact JSON text.
    var encoded: String {
        var text = ""
        append(to: &text)
        return text
    }

    /// The value as UTF-8 bytes.
    var bytes: [UInt8] { Array(encoded.utf8) }

    private func append(to text: inout String) {
        switch self {
        case .string(let value): text += JSONString.quoted(value)
        case .integer(let value): text += String(value)
        case .bool(let value): text += value ? "true" : "false"
        case .array(let values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.append(to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { text += "," }
                text += JSONString.quoted(key) + ":"
                value.append(to: &text)
            }
            text += "}"
        }
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.encoded == rhs.encoded }

    func hash(into hasher: inout Hasher) { hasher.combine(encoded) }
}

/// An object's members as they are built: optional members are added only when present.
struct AdvancedCommerceJSONObject {
    private(set) var members: [(String, AdvancedCommerceJSON)] = []

    /// Adds `key` with `value`.
    mutating func add(_ key: String, _ value: AdvancedCommerceJSON) { members.append((key, value)) }

    /// Adds `key` with the string, unless it is empty.
    mutating func add(_ key: String, ifPresent value: String) {
        if !value.isEmpty { members.append((key, .string(value))) }
    }

    /// Adds `key` with the array, unless it is empty.
    mutating func add(_ key: String, ifPresent values: [AdvancedCommerceJSON]) {
        if !values.isEmpty { members.append((key, .array(values))) }
    }

    /// Adds `key` with the value, unless it is nil.
    mutating func add(_ key: String, ifPresent value: AdvancedCommerceJSON?) {
        if let value { members.append((key, value)) }
    }

    /// The object.
    var json: AdvancedCommerceJSON { .object(members) }
}
