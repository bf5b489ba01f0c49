import Foundation
import GatewayFoundation
import HTTPServer

/// A request the simulator refuses with one of Apple's error codes.
struct AppleRejection: Error, Sendable {
    var code: Int64
    var message: String

    init(_ code: Int64, _ message: String) {
        self.code = code
        self.message = message
    }

    static func invalidTransactionId() -> AppleRejection { AppleRejection(4_000_006, "Invalid transaction id.") }
    static func transactionIdNotFound() -> AppleRejection { AppleRejection(4_040_010, "Transaction id not found.") }
}

/// Apple-shaped responses.
enum SimulatorResponse {
    static let jsonHeaders: [(name: String, value: String)] = [("content-type", "application/json")]

    /// 200 with a JSON body.
    static func json(_ value: OrderedJSON, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: jsonHeaders, body: value.encoded)
    }

    /// `{"errorCode":N,"errorMessage":"…"}` with the status of the code's first three digits.
    static func error(_ code: Int64, _ message: String) -> HTTPResponse {
        let status = (1_000_000...9_999_999).contains(code) ? Int(code / 10_000) : 500
        return json(.object([("errorCode", .integer(code)), ("errorMessage", .string(message))]), status: status)
    }

    static func error(_ rejection: AppleRejection) -> HTTPResponse { error(rejection.code, rejection.message) }

    /// Apple's 401: a plain-text body, not a JSON error.
    static func unauthenticated() -> HTTPResponse {
        HTTPResponse(
            status: 401, headers: [("content-type", "text/plain")], body: Array("Unauthenticated\n".utf8))
    }

    /// Unknown path or method: 404 with an empty body, as Apple.
    static func notFound() -> HTTPResponse { HTTPResponse(status: 404) }

    /// 429 with `Retry-After` as UNIX milliseconds (Apple's App Store Server API documentation).
    static func rateLimited(retryAt: WallTime) -> HTTPResponse {
        var response = error(4_290_000, "Rate limit exceeded.")
        response.headers.append(("retry-after", String(retryAt.millisecondsSince1970)))
        return response
    }

    /// A load balancer's 502 page.
    static func htmlBadGateway() -> HTTPResponse {
        let page =
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
            + "<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"
        return HTTPResponse(status: 502, headers: [("content-type", "text/html")], body: Array(page.utf8))
    }

    /// A 400 for a malformed simulator control header (not an Apple response, so tests notice).
    static func badControlHeader(_ name: String) -> HTTPResponse {
        HTTPResponse(
            status: 400, headers: [("content-type", "text/plain")],
            body: Array("malformed \(name) header; see the simulator README for its grammar\n".utf8))
    }
}
