import AppStoreDomain
import Foundation

/// What the CLIENT span of an Apple call says about Apple's host and about a failed call.
enum AppleSpan {
    /// The host of a base URL (`https://host[:port]/path` → `host`).
    static func host(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") { return String(rest[...close]) }
        if let colon = rest.lastIndex(of: ":") { rest = rest[..<colon] }
        return String(rest)
    }

    /// A short description of why the call failed (the error's kind, never request data).
    static func problem(_ error: GatewayError) -> String {
        switch error {
        case .rateLimited: "rate limited before calling Apple"
        case .upstreamUnavailable(let outage):
            "Apple unavailable after \(outage.attempts) attempts: \(outage.lastProblem)"
        case .deadlineExceeded: "deadline exceeded"
        case .cancelled: "cancelled"
        default: "failed"
        }
    }
}
