import AppStoreDomain
import Foundation
import GatewayFoundation

/// A failure the simulator can inject, as a real upstream fails.
package enum SimulatedFault: Sendable, Hashable {
    /// An Apple error body with this code, HTTP status = its first three digits (e.g. 5000001 → 500).
    case appleError(code: Int64)
    /// Waits this long before answering.
    case latency(Duration)
    /// No answer: the connection (HTTP/1.1) or stream (HTTP/2) is reset.
    case resetConnection
    /// A load balancer's HTML 502 page instead of JSON.
    case htmlBadGateway
    /// The JSON body cut in half (Content-Length matches the cut body).
    case truncatedBody
    /// The body sent in `chunks` pieces, `interval` apart.
    case slowBody(chunks: Int, interval: Duration)
    /// Every JWS of the answer signed by a leaf the simulator's OCSP responder reports revoked (the PKI
    /// must be online, `AppStoreSimulator.enableOCSP`; otherwise ignored).
    case revokedSigner
    /// In every notification history page, the item at this 1-based position has a signature that does not
    /// verify.
    case forgedNotification(position: Int)
}

/// A configured fault: which requests it hits and how often.
package struct FaultRule: Sendable {
    /// How often a matching request is hit.
    package enum Trigger: Sendable, Hashable {
        /// Each matching request with this probability (decided by the seeded generator).
        case probability(Double)
        /// Every n-th matching request (n, 2n, …).
        case everyNth(Int)
    }

    /// Only this endpoint (nil: all).
    package var endpoint: AppleEndpoint?
    /// Only this environment (nil: both).
    package var environment: AppleEnvironment?
    package var trigger: Trigger
    package var faults: [SimulatedFault]

    package init(
        endpoint: AppleEndpoint? = nil, environment: AppleEnvironment? = nil, trigger: Trigger,
        faults: [SimulatedFault]
    ) {
        self.endpoint = endpoint
        self.environment = environment
        self.trigger = trigger
        self.faults = faults
    }
}

/// The `x-simulator-fault` request header:
///
///     x-simulator-fault: directive *( ";" directive )      (commas work too, spaces are ignored)
///     directive = "error=" 7DIGIT          Apple error body, e.g. error=5000001 → HTTP 500
///               / "latency=" duration      wait first, e.g. latency=200ms, latency=2s
///               / "reset"                  reset the connection/stream, no response
///               / "html502"                HTML 502 Bad Gateway page
///               / "truncated"              JSON body cut in half
///               / "slow=" count "x" duration   body in count chunks, duration apart, e.g. slow=5x100ms
///               / "revoked-signer"         JWS signed by a leaf the OCSP responder reports revoked
///               / "forged-notification=" 1*DIGIT   that item of each notification history page badly signed
///     duration  = 1*DIGIT ( "ms" / "s" )
package enum FaultHeader {
    /// The header name.
    package static let name = "x-simulator-fault"

    /// Parses a header value; nil when any directive is malformed.
    package static func parse(_ value: String) -> [SimulatedFault]? {
        var faults: [SimulatedFault] = []
        let directives = value.split(whereSeparator: { $0 == ";" || $0 == "," })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !directives.isEmpty else { return nil }
        for directive in directives {
            let parts = directive.split(separator: "=", maxSplits: 1).map(String.init)
            switch (parts[0].lowercased(), parts.count > 1 ? parts[1] : nil) {
            case ("reset", nil): faults.append(.resetConnection)
            case ("html502", nil): faults.append(.htmlBadGateway)
            case ("truncated", nil): faults.append(.truncatedBody)
            case ("revoked-signer", nil): faults.append(.revokedSigner)
            case ("forged-notification", let value?):
                guard let position = Int(value), (1...20).contains(position) else { return nil }
                faults.append(.forgedNotification(position: position))
            case ("error", let value?):
                guard let code = Int64(value), (1_000_000...9_999_999).contains(code) else { return nil }
                faults.append(.appleError(code: code))
            case ("latency", let value?):
                guard let duration = duration(value) else { return nil }
                faults.append(.latency(duration))
            case ("slow", let value?):
                let pieces = value.lowercased().split(separator: "x", maxSplits: 1).map(String.init)
                guard pieces.count == 2, let chunks = Int(pieces[0]), (1...10_000).contains(chunks),
                    let interval = duration(pieces[1])
                else { return nil }
                faults.append(.slowBody(chunks: chunks, interval: interval))
            default: return nil
            }
        }
        return faults
    }

    static func duration(_ text: String) -> Duration? {
        let lower = text.lowercased()
        if lower.hasSuffix("ms"), let value = Int64(lower.dropLast(2)), value >= 0 { return .milliseconds(value) }
        if lower.hasSuffix("s"), let value = Int64(lower.dropLast(1)), value >= 0 { return .seconds(value) }
        return nil
    }
}

/// Decides which configured faults hit a request; counters and the generator are shared by all requests.
final class FaultInjector: Sendable {
    private struct State {
        var random: DeterministicRandom
        var matches: [Int]
    }
    private let rules: [FaultRule]
    private let state: Lock<State>

    init(rules: [FaultRule], seed: UInt64) {
        self.rules = rules
        state = Lock(State(random: DeterministicRandom(seed: seed, stream: "faults"), matches: rules.map { _ in 0 }))
    }

    /// The configured faults for one request to `endpoint` in `environment`.
    func faults(for endpoint: AppleEndpoint, environment: AppleEnvironment) -> [SimulatedFault] {
        guard !rules.isEmpty else { return [] }
        return state.withLock { state in
            var hits: [SimulatedFault] = []
            for (index, rule) in rules.enumerated() {
                if let only = rule.endpoint, only != endpoint { continue }
                if let only = rule.environment, only != environment { continue }
                state.matches[index] += 1
                switch rule.trigger {
                case .everyNth(let n):
                    if n > 0, state.matches[index] % n == 0 { hits += rule.faults }
                case .probability(let p):
                    if state.random.chance(p) { hits += rule.faults }
                }
            }
            return hits
        }
    }
}
