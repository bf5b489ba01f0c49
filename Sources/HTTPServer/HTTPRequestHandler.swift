/// A whole HTTP request, HTTP/2 or HTTP/1.1, body included: what simple request/response servers (the App
/// Store simulator, the admin endpoint) see.
public struct HTTPRequest: Sendable {
    /// "GET", "POST", ….
    public var method: String
    /// The request target as sent: path and query, e.g. "/inApps/v2/history/123?sort=DESCENDING".
    public var target: String
    /// Header fields with lowercase names, in arrival order.
    public var headers: [(name: String, value: String)]
    /// The request body.
    public var body: [UInt8]

    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The path, without the query.
    public var path: String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        return String(target[..<mark])
    }

    /// The query's name/value pairs in order, percent-decoded ('+' is a space); repeated names repeat.
    public var queryItems: [(name: String, value: String)] {
        guard let mark = target.firstIndex(of: "?") else { return [] }
        return target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.percentDecode(parts[0])
            let value = parts.count > 1 ? Self.percentDecode(parts[1]) : ""
            return (name, value)
        }
    }

    /// The first value of a header field, by lowercase name.
    public func header(_ name: String) -> String? {
        headers.first(where: { $0.name == name })?.value
    }

    private static func percentDecode(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "%"), bytes.count >= 2,
                let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
            {
                out.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A whole HTTP response, with how to deliver it (faults are delivery choices, so tests can inject them).
public struct HTTPResponse: Sendable {
    /// How the bytes reach the client.
    public enum Delivery: Sendable, Hashable {
        /// All at once.
        case normal
        /// The body in `chunks` pieces, `interval` apart (a slow upstream).
        case slowBody(chunks: Int, interval: Duration)
        /// No response: the connection is reset (HTTP/1.1: closed; HTTP/2: the stream is reset).
        case resetConnection
    }

    public var status: Int
    /// Header fields (lowercase names); content-length is added by the server.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var delivery: Delivery

    public init(
        status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], delivery: Delivery = .normal
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delivery = delivery
    }
}

/// Serves whole requests; called once per request, off the event loop.
public protocol HTTPRequestHandler: Sendable {
    func handle(_ request: HTTPRequest) async -> HTTPResponse
}
