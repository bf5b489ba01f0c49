import AppStoreClient
import AppStoreDomain
import GRPC
import GatewayFoundation
import HTTPServer
import Metrics
import Observability
import ProtoCodec
import SignedData

/// The admin HTTP/1.1 endpoint: `/metrics` (Prometheus), `/healthz` (alive), `/readyz` (taking calls).
///
/// With a bearer token (`admin.bearerTokenFile`), every path but the probes' (`openPaths`) answers 401 with a
/// `WWW-Authenticate: Bearer` challenge (RFC 6750 §3) unless the request carries the token, so an unknown
/// path tells a scanner nothing either. The probes stay open: a kubelet probe carries no credentials, and
/// they say only whether the process is alive and taking calls.
package struct AdminEndpoint: HTTPRequestHandler {
    let registry: MetricsRegistry
    let board: HealthStatusBoard
    let readinessService: String
    let scrapeGauges: @Sendable () -> Void
    let token: AdminBearerToken?

    /// The paths answered without the bearer token: the liveness and readiness probes'.
    package static let openPaths: Set<String> = ["/healthz", "/readyz"]

    /// `connections` (each port's connection statistics, by port name; "grpc" is the gRPC port) and
    /// `verifier` feed gauges read at each scrape; `appNames` maps bundle ids to the app names the other
    /// metrics' `app` label uses; `token`, when given, guards every path but `openPaths`.
    package init(
        registry: MetricsRegistry, board: HealthStatusBoard, readinessService: String,
        connections: @escaping @Sendable () -> [String: ConnectionStatistics], verifier: SignedDataVerifier,
        rateLimiter: RateLimiter, upstream: @escaping @Sendable () -> UpstreamMetrics = { UpstreamMetrics() },
        appNames: [String: String] = [:], clock: any GatewayClock = SystemClock(), token: AdminBearerToken? = nil
    ) {
        self.token = token
        self.registry = registry
        self.board = board
        self.readinessService = readinessService
        let openConnections = registry.gauge(
            "appstore_gateway_open_connections", help: "Client HTTP/2 connections of the gRPC port established now."
        ).labels()
        let pendingHandshakes = registry.gauge(
            "appstore_gateway_pending_handshakes",
            help: "Connections still in their TLS handshake or before their HTTP/2 preface, per port.",
            labelNames: ["port"])
        let deadlineCloses = registry.counter(
            "appstore_gateway_handshake_deadline_closes_total",
            help: "Connections closed by connection.handshakeTimeout, per port and deadline (TLS or HTTP/2 preface).",
            labelNames: ["port", "deadline"])
        let addressLimitCloses = registry.counter(
            "appstore_gateway_pending_handshakes_evicted_total",
            help: "Connections closed in their handshake because a newer one from the same address went past "
                + "limits.maxPendingHandshakesPerAddress, per port.",
            labelNames: ["port"])
        let tlsHandshakes = registry.counter(
            "appstore_gateway_tls_handshakes_total",
            help: "TLS handshakes completed, per port; resumed=\"true\" for those that resumed a session.",
            labelNames: ["port", "resumed"])
        let goaways = registry.counter(
            "appstore_gateway_goaway_sent_total",
            help: "GOAWAY frames the gRPC and webhook ports sent, by HTTP/2 error code (RFC 9113 §7); the log says "
                + "why. NO_ERROR is a graceful close (idle, maximum age, shutdown: two frames each); any other code "
                + "made a client drop its connection.",
            labelNames: ["code"])
        let hits = registry.counter(
            "appstore_gateway_verification_chain_cache_hits_total", help: "Verified-chain cache hits."
        ).labels()
        let misses = registry.counter(
            "appstore_gateway_verification_chain_cache_misses_total", help: "Verified-chain cache misses."
        ).labels()
        let signatureHits = registry.counter(
            "appstore_gateway_verification_signature_cache_hits_total",
            help: "Signature checks answered by the verified-signature cache (no ECDSA)."
        ).labels()
        let signatureMisses = registry.counter(
            "appstore_gateway_verification_signature_cache_misses_total",
            help: "Signature checks the verified-signature cache could not answer."
        ).labels()
        let process = ProcessMetrics(registry: registry)
        let transfers = registry.counter(
            "appstore_gateway_upstream_transfers_total",
            help: "HTTP requests to Apple handed to libcurl, by who drove them: the event loop the calling RPC ran on "
                + "(caller_loop) or the client's loop, upstream-curl (client_thread, for callers on no loop).",
            labelNames: ["driver"])
        let failedTransfers = registry.counter(
            "appstore_gateway_upstream_transfers_failed_total",
            help: "HTTP requests to Apple that ended without a response (timeouts, resets, cancellations)."
        ).labels()
        let upstreamConnections = registry.counter(
            "appstore_gateway_upstream_connections_opened_total",
            help: "Connections opened to Apple (low under load: HTTP/2 multiplexing; one pool per event loop)."
        ).labels()
        let ratio = registry.gauge(
            "appstore_gateway_verification_chain_cache_hit_ratio", help: "Hits / (hits + misses) since start."
        ).labels()
        let tokens = registry.gauge(
            "appstore_gateway_rate_limit_tokens",
            help: "Tokens left in each local bucket of Apple's rate limits (buckets appear on first use).",
            labelNames: ["app", "endpoint", "environment"])
        scrapeGauges = {
            for level in rateLimiter.levels(now: clock.monotonicNow()) {
                tokens.labels(
                    appNames[level.key.bundleID] ?? level.key.bundleID, level.key.endpoint.configName,
                    level.key.environment.rawValue
                )
                .set(Double(level.tokens))
            }
            let ports = connections()
            openConnections.set(Double(ports["grpc"]?.open ?? 0))
            for (port, statistics) in ports {
                pendingHandshakes.labels(port).set(Double(statistics.pendingHandshakes))
                let resumed = statistics.resumedTLSHandshakes
                for (label, count) in [("false", statistics.tlsHandshakes - resumed), ("true", resumed)] {
                    tlsHandshakes.labels(port, label).follow(total: Double(count))
                }
                addressLimitCloses.labels(port).follow(total: Double(statistics.closedByAddressLimit))
                for (deadline, count) in statistics.closedByDeadline {
                    deadlineCloses.labels(port, deadline.rawValue).follow(total: Double(count))
                }
            }
            // Summed over the ports; the codes an alert watches are there from the start, at zero.
            var sent: [HTTP2ErrorCode: Int] = [.noError: 0, .protocolError: 0, .internalError: 0, .enhanceYourCalm: 0]
            for statistics in ports.values { sent.merge(statistics.goawaysSent, uniquingKeysWith: +) }
            for (code, count) in sent { goaways.labels(code.name).follow(total: Double(count)) }
            let hit = Double(verifier.chainCacheHits)
            let miss = Double(verifier.chainCacheMisses)
            // The server, the verifier and the upstream client keep running totals; the counters follow them.
            hits.follow(total: hit)
            misses.follow(total: miss)
            signatureHits.follow(total: Double(verifier.signatureCacheHits))
            signatureMisses.follow(total: Double(verifier.signatureCacheMisses))
            let upstreamNow = upstream()
            for (driver, count) in [
                ("caller_loop", upstreamNow.transfersOnCallerLoops),
                ("client_thread", upstreamNow.transfersStarted - upstreamNow.transfersOnCallerLoops),
            ] {
                transfers.labels(driver).follow(total: Double(count))
            }
            failedTransfers.follow(total: Double(upstreamNow.transfersFailed))
            upstreamConnections.follow(total: Double(upstreamNow.connectionsOpened))
            process.update()
            ratio.set(hit + miss > 0 ? hit / (hit + miss) : 0)
        }
    }

    /// The admin port's transport: GET and HEAD only, no request body at all, a request head within 8 KiB
    /// and 10 s, idle keep-alive connections closed after 60 s, no maximum age, at most 64 connections. Scrapers
    /// and probes need nothing more, and anyone who can reach the port gets nothing more to hold memory with.
    package static var transportLimits: HTTP2Configuration {
        var configuration = HTTP2Configuration()
        configuration.maxConnectionAge = nil
        configuration.maxConnections = 64
        configuration.http1.allowedMethods = ["GET", "HEAD"]
        configuration.http1.maxBodyBytes = 0
        configuration.http1.maxHeadBytes = 8 * 1024
        configuration.http1.headerTimeout = .seconds(10)
        configuration.http1.idleTimeout = .seconds(60)
        return configuration
    }

    package func handle(_ request: HTTPRequest) async -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPResponse(status: 405, headers: [("allow", "GET, HEAD")])
        }
        if let token, !Self.openPaths.contains(request.path) {
            switch Self.authorization(request.headers, token: token) {
            case .granted: break
            case .missing: return unauthorized(#"Bearer realm="appstore-gateway admin""#)
            case .invalid: return unauthorized(#"Bearer realm="appstore-gateway admin", error="invalid_token""#)
            }
        }
        switch request.path {
        case "/metrics":
            scrapeGauges()
            return HTTPResponse(
                status: 200, headers: [("content-type", MetricsRegistry.contentType)],
                body: Array(registry.render().utf8))
        case "/healthz":
            return text(200, "ok")
        case "/readyz":
            let serving = board.status(of: readinessService) == .serving
            return serving ? text(200, "ready") : text(503, "not ready: draining or starting")
        default:
            return text(404, "not found: /metrics, /healthz, /readyz")
        }
    }

    /// What a request's `authorization` fields prove against `token`.
    enum Authorization: Equatable {
        case granted
        /// No bearer credentials at all (none, or another scheme): challenged without an error code (RFC 6750 §3.1).
        case missing
        /// Bearer credentials that are not the token, malformed, or sent twice.
        case invalid
    }

    /// Judges `headers` (lowercase names): exactly one `authorization` field, `Bearer` (any case, RFC 7235
    /// §2.1), one or more spaces, then the token.
    static func authorization(_ headers: [(name: String, value: String)], token: AdminBearerToken) -> Authorization {
        let fields = headers.filter { $0.name == "authorization" }
        guard let field = fields.first else { return .missing }
        let value = Array(field.value.utf8)
        let scheme = value.prefix { $0 != UInt8(ascii: " ") }
        guard String(decoding: scheme, as: UTF8.self).lowercased() == "bearer" else {
            return fields.count == 1 ? .missing : .invalid
        }
        let credentials = value.dropFirst(scheme.count).drop { $0 == UInt8(ascii: " ") }
        guard fields.count == 1, scheme.count < value.count, AdminBearerToken.isBearerToken(credentials) else {
            return .invalid
        }
        return token.accepts(credentials) ? .granted : .invalid
    }

    private func unauthorized(_ challenge: String) -> HTTPResponse {
        HTTPResponse(
            status: 401,
            headers: [
                ("www-authenticate", challenge), ("cache-control", "no-store"),
                ("content-type", "text/plain; charset=utf-8"),
            ],
            body: Array("unauthorized: this path needs the admin bearer token\n".utf8))
    }

    private func text(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("content-type", "text/plain; charset=utf-8")], body: Array((body + "\n").utf8))
    }
}
