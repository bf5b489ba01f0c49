import AppStoreDomain

/// One HTTP request to an upstream (Apple, the simulator, a test fake).
package struct UpstreamRequest: Sendable {
    /// GET, POST or PUT.
    package var method: HTTPMethod
    /// The absolute URL, query included. `https://` negotiates HTTP/2 by ALPN; `http://` uses HTTP/1.1.
    package var url: String
    /// Request header fields (names as sent).
    package var headers: [(name: String, value: String)]
    /// The body for POST/PUT; nil sends none.
    package var body: [UInt8]?
    /// The whole transfer (connect, send, receive) must finish within this; nil for no limit.
    package var timeout: Duration?

    /// A request.
    package init(
        method: HTTPMethod = .get, url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
        timeout: Duration? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// A complete upstream response.
package struct UpstreamResponse: Sendable {
    /// The HTTP status code.
    package var status: Int
    /// Header fields of the final response, names lowercased, in arrival order (HTTP/2 trailers included).
    package var headers: [(name: String, value: String)]
    /// The body.
    package var body: [UInt8]
    /// The HTTP version used: 1 (HTTP/1.x) or 2.
    package var httpVersion: Int

    /// A response.
    package init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], httpVersion: Int = 2) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    /// The first value of a header field, by lowercase name.
    package func header(_ name: String) -> String? {
        headers.first(where: { $0.name == name })?.value
    }

    /// Apple's request id, from whichever of its request-id headers is present.
    package var appleRequestID: String? {
        header("apple-request-id") ?? header("x-apple-request-uuid") ?? header("x-request-id")
    }
}

/// Why an upstream transfer produced no response.
package struct UpstreamTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    package enum Kind: Sendable, Hashable {
        /// The transfer's timeout passed.
        case timedOut
        /// The caller's task was cancelled; the transfer was removed.
        case cancelled
        /// Connect, TLS, or stream failure (reset, framing error, closed early).
        case connectionFailed
        /// The response body was larger than the client accepts.
        case responseTooLarge
        /// The request could not be set up (a malformed URL, an option libcurl refused).
        case invalidRequest
        /// The client was shut down.
        case shutDown
    }

    /// The kind of failure.
    package var kind: Kind
    /// libcurl's text for it, for logs and error messages.
    package var message: String

    /// An error.
    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }
}

/// Counters of an `UpstreamHTTPClient`, for metrics, tests and benchmarks.
package struct UpstreamMetrics: Sendable, Hashable {
    /// Transfers handed to libcurl.
    package var transfersStarted = 0
    /// Transfers that ended with a response.
    package var transfersSucceeded = 0
    /// Transfers that ended without one (timeouts, resets, cancellations included).
    package var transfersFailed = 0
    /// Transfers removed because their caller was cancelled.
    package var transfersCancelled = 0
    /// New connections opened (sum of `CURLINFO_NUM_CONNECTS`): low under load means HTTP/2 multiplexing.
    package var connectionsOpened = 0
    /// Transfers driven by the event loop their caller ran on (the rest were handed over to the client's loop).
    package var transfersOnCallerLoops = 0

    /// Zero counters.
    package init() {}
}
