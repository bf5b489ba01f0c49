import GatewayFoundation

/// The JSON bodies the gateway sends Apple: an object with keys in sorted order (so the same request is the
/// same bytes), every string escaped by `JSONString`.
enum AppleJSONBody {
    /// One member's value.
    enum Value: Sendable, Hashable {
        case string(String)
        case integer(Int64)
        case bool(Bool)
        case strings([String])
        /// A nested object, keys sorted too.
        case object([String: Value])
        /// An array of objects.
        case objects([[String: Value]])

        var encoded: String {
            switch self {
            case .string(let text): JSONString.quoted(text)
            case .integer(let number): String(number)
            case .bool(let flag): flag ? "true" : "false"
            case .strings(let texts): "[" + texts.map(JSONString.quoted).joined(separator: ",") + "]"
            case .object(let members): AppleJSONBody.text(members)
            case .objects(let list): "[" + list.map(AppleJSONBody.text).joined(separator: ",") + "]"
            }
        }
    }

    /// `members` as a JSON object, UTF-8.
    static func encode(_ members: [String: Value]) -> [UInt8] { Array(text(members).utf8) }

    private static func text(_ members: [String: Value]) -> String {
        "{"
            + members.sorted { $0.key < $1.key }.map { JSONString.quoted($0.key) + ":" + $0.value.encoded }
            .joined(separator: ",") + "}"
    }
}
