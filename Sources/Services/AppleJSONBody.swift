import GatewayFoundation

/// The JSON bodies the gateway sends Apple: a flat object with keys in sorted order (so the same request is the
/// same bytes), every string escaped by `JSONString`.
enum AppleJSONBody {
    /// One member's value.
    enum Value: Sendable, Hashable {
        case string(String)
        case integer(Int64)
        case bool(Bool)
        case strings([String])

        var encoded: String {
            switch self {
            case .string(let text): JSONString.quoted(text)
            case .integer(let number): String(number)
            case .bool(let flag): flag ? "true" : "false"
            case .strings(let texts): "[" + texts.map(JSONString.quoted).joined(separator: ",") + "]"
            }
        }
    }

    /// `members` as a JSON object, UTF-8.
    static func encode(_ members: [String: Value]) -> [UInt8] {
        let text =
            "{"
            + members.sorted { $0.key < $1.key }.map { JSONString.quoted($0.key) + ":" + $0.value.encoded }
            .joined(separator: ",") + "}"
        return Array(text.utf8)
    }
}
