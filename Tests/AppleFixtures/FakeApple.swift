import AppStoreClient
import AppStoreDomain
import Configuration
import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer
import Logging
import SignedData
import TestSupport

/// A scripted stand-in for Apple: our HTTP/2 server over real TLS (ALPN h2) with a CA of its own. Every
/// request is recorded; `script` answers it (it may sleep to play a slow upstream). Production is served
/// under `/production`, sandbox under `/sandbox`, so one server plays both hosts.
package final class FakeApple: Sendable {
    package typealias Script = @Sendable (_ request: HTTPRequest, _ number: Int) async -> HTTPResponse

    private final class Recorder: HTTPRequestHandler {
        let requests = Lock<[HTTPRequest]>([])
        let script: Lock<Script>
        init(_ script: @escaping Script) { self.script = Lock(script) }
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            let (number, script) = requests.withLock { requests in
                requests.append(request)
                return (requests.count, self.script.withLock { $0 })
            }
            return await script(request, number)
        }
    }

    private let tls: TLSTestServer
    private let recorder: Recorder
    package var caFile: String { tls.caFile }
    /// A temporary folder that lives as long as the fake (keys and files for the test).
    package var directory: URL { tls.directory }
    package var baseURL: String { "https://127.0.0.1:\(tls.server.port)" }

    package init(_ script: @escaping Script) throws {
        recorder = Recorder(script)
        tls = try TLSTestServer(handler: recorder, caName: "Fake Apple CA")
    }

    /// TLS handshakes completed so far, and how many of them resumed an earlier session.
    package var handshakes: (all: Int, resumed: Int) {
        let statistics = tls.server.connectionStatistics
        return (statistics.tlsHandshakes, statistics.resumedTLSHandshakes)
    }

    /// Every request received so far, in arrival order.
    package var requests: [HTTPRequest] { recorder.requests.withLock { $0 } }

    /// Replaces the script.
    package func setScript(_ script: @escaping Script) { recorder.script.withLock { $0 = script } }
}

/// JSON answers in Apple's shapes.
package enum AppleJSON {
    package static func response(_ object: [String: Any], status: Int = 200, headers: [(String, String)] = [])
        -> HTTPResponse
    {
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return HTTPResponse(
            status: status,
            headers: [("content-type", "application/json"), ("apple-request-id", "req-\(UUID().uuidString.prefix(8))")]
                + headers,
            body: Array(body))
    }

    package static func error(_ code: Int64, status: Int, headers: [(String, String)] = []) -> HTTPResponse {
        response(["errorCode": code, "errorMessage": "scripted \(code)"], status: status, headers: headers)
    }

    package static func history(
        _ signed: [String], revision: String = "rev-1", hasMore: Bool = false, environment: String = "Production",
        bundleId: String = "com.example.app", appAppleId: Int64 = 1234
    ) -> HTTPResponse {
        response([
            "revision": revision, "hasMore": hasMore, "bundleId": bundleId, "appAppleId": appAppleId,
            "environment": environment, "signedTransactions": signed,
        ])
    }
}

/// Apps, keys and clients wired to a `FakeApple`.
package struct UpstreamFixture: Sendable {
    package let fake: FakeApple
    /// Where `http` serves its callers on no loop; stopped when the fixture goes.
    package let loop: RunningLoop
    package let http: UpstreamHTTPClient
    package let client: AppStoreAPIClient
    package let configuration: GatewayConfiguration
    package let keys: [String: ECPrivateKey]

    package static func app(
        _ name: String, bundleId: String? = nil, environment: GatewayConfiguration.EnvironmentPolicy = .production,
        fallbackOn401: Bool = false, rateLimits: RateLimits? = nil
    ) -> GatewayConfiguration.App {
        GatewayConfiguration.App(
            name: name, bundleId: bundleId ?? "com.example.\(name)", appAppleId: 1234,
            issuerId: "57246542-96fe-1a63-e053-0824d011072a",
            keyId: "KEY\(name.uppercased().prefix(7))".padding(toLength: 10, withPad: "X", startingAt: 0),
            privateKeyFile: "/nonexistent", environment: environment, sandboxFallbackOnUnauthorized: fallbackOn401,
            rateLimits: rateLimits)
    }

    package init(
        apps: [GatewayConfiguration.App] = [app("example", bundleId: "com.example.app")],
        maxWait: Duration = .seconds(1),
        retries: RetryPolicy = RetryPolicy(initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(20)),
        clock: any GatewayClock = SystemClock(), metrics: AppStoreClientMetrics = AppStoreClientMetrics(),
        script: @escaping FakeApple.Script = { _, _ in AppleJSON.history([]) }
    ) throws {
        fake = try FakeApple(script)
        var configuration = GatewayConfiguration()
        configuration.apps = apps
        configuration.apple.productionURL = fake.baseURL + "/production"
        configuration.apple.sandboxURL = fake.baseURL + "/sandbox"
        configuration.apple.caFile = fake.caFile
        configuration.rateLimits.maxWait = maxWait
        configuration.retries = retries
        self.configuration = configuration
        var keys: [String: ECPrivateKey] = [:]
        var signers: [String: any ES256Signer] = [:]
        for app in apps {
            let key = try ECPrivateKey(generatingOn: .p256)
            keys[app.bundleId] = key
            signers[app.bundleId] = AppKeySigner(key: key)
        }
        self.keys = keys
        loop = try RunningLoop()
        http = try UpstreamHTTPClient(configuration: .init(caFile: fake.caFile), loop: loop.loop)
        client = try AppStoreAPIClient(
            configuration: configuration, http: http, signers: signers, clock: clock, metrics: metrics)
    }

    package func app(_ name: String = "example") throws(GatewayError) -> GatewayConfiguration.App {
        try client.apps.app(named: name)
    }
}

/// A deadline `duration` from now on the system clock (what the client reads by default).
package func deadline(in duration: Duration) -> MonotonicInstant {
    SystemClock().monotonicNow() + duration
}

/// The error a call threw, as a GatewayError.
package func gatewayError<T>(_ body: () async throws(GatewayError) -> T) async -> GatewayError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}
