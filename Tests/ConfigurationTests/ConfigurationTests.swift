import AppStoreClient
import FoundationEssentials
import GRPC
import HTTPServer
import Services
import SignedData
import Testing

@testable import AppStoreDomain
@testable import Configuration
@testable import GatewayFoundation

@Suite struct ConfigurationTests {
    private static let repoRoot: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()

    @Test func emptyDocumentGivesTheDefaults() throws {
        let config = try GatewayConfiguration.load(yaml: "")
        #expect(config.grpc.listen == ListenAddress(host: "0.0.0.0", port: 50051))
        #expect(config.grpc.maxReceiveMessageBytes == 4 * 1024 * 1024)
        #expect(config.grpc.shutdownGrace == .seconds(10))
        #expect(config.apps.isEmpty)
        #expect(config.grpc.http2.handshakeTimeout == .seconds(10))
        #expect(config.grpc.http2.maxPendingHandshakes == 1_024)
        #expect(config.grpc.http2.maxPendingHandshakesPerAddress == 32)
        #expect(config.grpc.http2.unauthenticatedIdleTimeout == .seconds(10))
        #expect(config.grpc.http2.headerBlockTimeout == .seconds(5))
    }

    @Test func theConnectionAdmissionKeysAreRead() throws {
        let config = try GatewayConfiguration.load(
            yaml: """
                limits: { maxPendingHandshakesPerAddress: 0 }
                connection: { unauthenticatedIdleTimeout: 1500ms, headerBlockTimeout: 2s }
                """)
        #expect(config.grpc.http2.maxPendingHandshakesPerAddress == 0)
        #expect(config.grpc.http2.unauthenticatedIdleTimeout == .milliseconds(1_500))
        #expect(config.grpc.http2.headerBlockTimeout == .seconds(2))
    }

    @Test func exampleFileLoadsWithItsDocumentedValues() throws {
        let text = try String(contentsOfFile: Self.repoRoot + "/config/example.yaml", encoding: .utf8)
        let config = try GatewayConfiguration.load(yaml: text)
        #expect(config.apps.count == 1)
        #expect(config.apps[0].name == "example")
        #expect(config.apps[0].environment == .auto)
        #expect(config.grpc.http2.keepaliveTimeout == .seconds(20))
        #expect(config.grpc.http2.idleTimeout == .seconds(300))
        #expect(config.verification.rootCertificates.isEmpty)
    }

    @Test func upstreamKeysHaveDocumentedDefaults() throws {
        let config = try GatewayConfiguration.load(yaml: "")
        #expect(config.rateLimits.defaults == .defaults)
        #expect(config.rateLimits.maxWait == .milliseconds(1_000))
        #expect(config.retries == .defaults)
        #expect(config.retries.maxAttempts == 3)
        #expect(config.history.maxPages == 50)
        #expect(config.apple.requestTimeout == .milliseconds(10_000))
        #expect(config.apple.connectTimeout == .milliseconds(5_000))
        #expect(config.apple.allowReadableKeyFiles == false)
    }

    @Test func exampleFileStatesTheUpstreamDefaults() throws {
        let text = try String(contentsOfFile: Self.repoRoot + "/config/example.yaml", encoding: .utf8)
        let config = try GatewayConfiguration.load(yaml: text)
        #expect(
            config.rateLimits.defaults.rate(for: .getTransactionHistory, in: .production)
                == EndpointRate(perSecond: 50, burst: 50))
        #expect(
            config.rateLimits.defaults.rate(for: .getTransactionHistory, in: .sandbox)
                == EndpointRate(perSecond: 5, burst: 5))
        #expect(config.retries == .defaults)
        #expect(config.history.maxPages == 50)
        #expect(config.apps[0].sandboxFallbackOnUnauthorized == false)
        #expect(config.apps[0].rateLimits == nil)
    }

    @Test func serviceLimitKeysHaveDocumentedDefaultsAndAreRead() throws {
        let defaults = try GatewayConfiguration.load(yaml: "")
        #expect(defaults.history.maxResponseBytes == 4_000_000)
        #expect(defaults.verification.allowUnboundVerification == false)
        #expect(defaults.verification.poolThreads == 2)
        #expect(defaults.verification.poolQueue == 64)
        #expect(defaults.verification.negativeCacheTTL == .milliseconds(30_000))
        let example = try GatewayConfiguration.load(
            yaml: try String(contentsOfFile: Self.repoRoot + "/config/example.yaml", encoding: .utf8))
        #expect(example.history.maxResponseBytes == defaults.history.maxResponseBytes)
        #expect(example.verification == defaults.verification)
        let config = try GatewayConfiguration.load(
            yaml: """
                history: { maxResponseBytes: 30000 }
                verification: { allowUnboundVerification: true, poolThreads: 4, poolQueue: 0, negativeCacheTTL: 0s }
                """, environment: ["APPSTORE_GATEWAY_VERIFICATION_POOL_QUEUE": "8"])
        #expect(config.history.maxResponseBytes == 30_000)
        #expect(config.verification.allowUnboundVerification)
        #expect(config.verification.poolThreads == 4)
        #expect(config.verification.poolQueue == 8)
        #expect(config.verification.negativeCacheTTL == .milliseconds(0))
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.load(yaml: "history: { maxResponseBytes: 10 }")
        }
        // Durations past 100 years are refused, not converted with a trap.
        for text in ["1e30s", "1e300h", "nan", "-1s", "inf"] {
            #expect(DurationText.milliseconds(text) == nil)
        }
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.load(yaml: "rateLimits: { maxWait: 1e30s }")
        }
    }

    @Test func rateLimitsAndRetriesAreRead() throws {
        let yaml = """
            rateLimits:
              sandboxFactor: 0.5
              maxWait: 250ms
              getTransactionHistory: { perSecond: 10, burst: 4 }
              lookUpOrderId: { perSecond: 2 }
            retries: { maxAttempts: 5, initialBackoff: 10ms, maxBackoff: 1s, multiplier: 3, minimumAttemptTime: 20ms, deadlineMargin: 5ms }
            history: { maxPages: 7 }
            apple: { requestTimeout: 3s, connectTimeout: 1s, allowReadableKeyFiles: true }
            apps:
              - bundleId: a.b
                keyId: ABCDEFGHIJ
                issuerId: i
                privateKeyFile: k
                environment: sandbox
                sandboxFallbackOnUnauthorized: true
                rateLimits:
                  getTransactionHistory: { burst: 2 }
              - { bundleId: c.d, keyId: ABCDEFGHIJ, issuerId: i, privateKeyFile: k, environment: sandbox }
            """
        let config = try GatewayConfiguration.load(yaml: yaml)
        #expect(config.rateLimits.maxWait == .milliseconds(250))
        #expect(config.rateLimits.defaults.sandboxFactor == 0.5)
        #expect(
            config.rateLimits.defaults.rate(for: .getTransactionHistory, in: .production)
                == EndpointRate(perSecond: 10, burst: 4))
        #expect(
            config.rateLimits.defaults.rate(for: .lookUpOrderId, in: .production)
                == EndpointRate(perSecond: 2, burst: 2))
        #expect(
            config.retries
                == RetryPolicy(
                    maxAttempts: 5, initialBackoff: .milliseconds(10), maxBackoff: .seconds(1), multiplier: 3,
                    minimumAttemptTime: .milliseconds(20), deadlineMargin: .milliseconds(5)))
        #expect(config.history.maxPages == 7)
        #expect(config.apple.requestTimeout == .milliseconds(3_000))
        #expect(config.apple.allowReadableKeyFiles)
        #expect(config.apps[0].sandboxFallbackOnUnauthorized)
        // Per-app overrides sit on top of the global section.
        #expect(
            config.apps[0].rateLimits?.rate(for: .getTransactionHistory, in: .production)
                == EndpointRate(perSecond: 10, burst: 2))
        #expect(config.apps[0].rateLimits?.sandboxFactor == 0.5)
        #expect(config.apps[1].rateLimits == nil)
    }

    @Test func environmentOverridesFileValues() throws {
        let config = try GatewayConfiguration.load(
            yaml: "listen: 127.0.0.1:1\nlimits:\n  maxConcurrentStreams: 10\n",
            environment: [
                "APPSTORE_GATEWAY_LISTEN": "[::1]:7000",
                "APPSTORE_GATEWAY_LIMITS_MAX_CONCURRENT_STREAMS": "20",
                "APPSTORE_GATEWAY_SHUTDOWN_GRACE": "1500ms",
            ])
        #expect(config.grpc.listen == ListenAddress(host: "::1", port: 7000))
        #expect(config.grpc.http2.maxConcurrentStreams == 20)
        #expect(config.grpc.shutdownGrace == .milliseconds(1_500))
    }

    @Test func environmentNamesFollowTheKeyPath() {
        #expect(ConfigurationReader.environmentName("apps[0].keyId") == "APPSTORE_GATEWAY_APPS_0_KEY_ID")
        #expect(
            ConfigurationReader.environmentName("limits.maxReceiveMessageBytes")
                == "APPSTORE_GATEWAY_LIMITS_MAX_RECEIVE_MESSAGE_BYTES")
    }

    @Test(arguments: [
        ("listen: nowhere", "listen"),
        ("threads: -1", "threads"),
        ("threads: many", "threads"),
        ("limits:\n  maxReceiveMessageBytes: 0", "limits.maxReceiveMessageBytes"),
        ("connection:\n  keepaliveTime: soon", "connection.keepaliveTime"),
        ("connection:\n  keepaliveTimeout: 0s", "connection.keepaliveTimeout"),
        ("connection:\n  handshakeTimeout: 0s", "connection.handshakeTimeout"),
        ("connection:\n  handshakeTimeout: 10m", "connection.handshakeTimeout"),
        ("limits:\n  maxPendingHandshakes: 0", "limits.maxPendingHandshakes"),
        ("limits:\n  maxPendingHandshakesPerAddress: -1", "limits.maxPendingHandshakesPerAddress"),
        ("connection:\n  headerBlockTimeout: 0s", "connection.headerBlockTimeout"),
        ("connection:\n  headerBlockTimeout: 6m", "connection.headerBlockTimeout"),
        ("connection:\n  unauthenticatedIdleTimeout: soon", "connection.unauthenticatedIdleTimeout"),
        ("lisen: 0.0.0.0:1", "lisen"),
        ("limits:\n  maxRecieveMessageBytes: 5", "limits.maxRecieveMessageBytes"),
        ("logging:\n  level: loud", "logging.level"),
        ("apple:\n  productionURL: ftp://x", "apple.productionURL"),
        ("verification:\n  rootCertificates: {a: b}", "verification.rootCertificates"),
        ("apps:\n  - bundleId: a.b\n    keyId: SHORT", "apps[0].keyId"),
        ("apps:\n  - keyId: ABCDEFGHIJ", "apps[0].bundleId"),
        ("apps:\n  - {bundleId: a.b, keyId: ABCDEFGHIJ, issuerId: i, privateKeyFile: k}", "apps[0].appAppleId"),
        ("rateLimits:\n  getTransactionHistory: {perSecond: 0}", "rateLimits.getTransactionHistory.perSecond"),
        ("rateLimits:\n  getTransactionHistry: {perSecond: 5}", "rateLimits.getTransactionHistry.perSecond"),
        ("rateLimits:\n  sandboxFactor: 2", "rateLimits.sandboxFactor"),
        ("retries:\n  maxAttempts: 0", "retries.maxAttempts"),
        ("history:\n  maxPages: 0", "history.maxPages"),
        (
            "apps:\n  - {bundleId: a.b, keyId: ABCDEFGHIJ, issuerId: i, privateKeyFile: k, environment: prod}",
            "apps[0].environment"
        ),
        (
            "apps:\n  - {bundleId: a.b, keyId: ABCDEFGHIJ, issuerId: i, privateKeyFile: k, environment: sandbox, color: red}",
            "apps[0].color"
        ),
        (
            "apps:\n  - {bundleId: a.b, keyId: ABCDEFGHIJ, issuerId: i, privateKeyFile: k, environment: sandbox}\n  - {bundleId: a.b, keyId: ABCDEFGHIJ, issuerId: i, privateKeyFile: k, environment: sandbox}",
            "apps[1].name"
        ),
        ("- just\n- a list", ""),
        ("listen: [a, b]", "listen"),
    ])
    func badValuesNameTheirKey(yaml: String, key: String) {
        do {
            _ = try GatewayConfiguration.load(yaml: yaml)
            Issue.record("accepted: \(yaml)")
        } catch {
            #expect(error.key == key, "\(error)")
            #expect(!error.problem.isEmpty)
        }
    }

    @Test(arguments: [
        ("250ms", UInt64(250)), ("20s", 20_000), ("5m", 300_000), ("2h", 7_200_000), ("30d", 2_592_000_000),
        ("3", 3_000),
        ("1.5s", 1_500),
    ])
    func durations(text: String, milliseconds: UInt64) {
        #expect(DurationText.milliseconds(text) == milliseconds)
    }

    @Test(arguments: ["", "s", "-1s", "1w", "abc", "nan", "d"])
    func badDurations(text: String) {
        #expect(DurationText.milliseconds(text) == nil)
    }
}

@Suite struct TransportLimitsConfigurationTests {
    @Test func bufferConnectionAndDeadlineLimitsHaveTheirDefaults() throws {
        let grpc = try GatewayConfiguration.load(yaml: "").grpc
        #expect(grpc.http2.maxBufferedBytesPerConnection == 8 * 1024 * 1024)
        #expect(grpc.http2.maxBufferedBytes == 64 * 1024 * 1024)
        #expect(grpc.http2.maxConnections == 10_000)
        #expect(grpc.defaultDeadline == .seconds(120))
        #expect(grpc.maxDeadline == .seconds(1_800))
    }

    @Test func theyAreReadFromYAMLAndEnvironment() throws {
        let yaml = """
            limits:
              maxBufferedBytesPerConnection: 5000000
              maxBufferedBytes: 20000000
              maxConnections: 100
              defaultDeadline: 30s
            """
        let grpc = try GatewayConfiguration.load(
            yaml: yaml, environment: ["APPSTORE_GATEWAY_LIMITS_MAX_DEADLINE": "5m"]
        ).grpc
        #expect(grpc.http2.maxBufferedBytesPerConnection == 5_000_000)
        #expect(grpc.http2.maxBufferedBytes == 20_000_000)
        #expect(grpc.http2.maxConnections == 100)
        #expect(grpc.defaultDeadline == .seconds(30))
        #expect(grpc.maxDeadline == .seconds(300))
    }

    @Test func inconsistentBudgetsAndDeadlinesAreRefused() {
        for (yaml, key) in [
            ("limits: { maxBufferedBytesPerConnection: 1000000 }", "limits.maxBufferedBytesPerConnection"),
            ("limits: { maxBufferedBytes: 5000000 }", "limits.maxBufferedBytes"),
            ("limits: { defaultDeadline: 0s }", "limits.defaultDeadline"),
            ("limits: { maxDeadline: 48h }", "limits.maxDeadline"),
        ] {
            #expect(throws: ConfigurationError.self, "\(yaml)") { try GatewayConfiguration.load(yaml: yaml) }
            do {
                _ = try GatewayConfiguration.load(yaml: yaml)
            } catch {
                #expect(error.key == key)
            }
        }
    }
}

@Suite struct EchoedInputTests {
    @Test func shortTextIsKeptAndLongTextClippedOnACharacterBoundary() {
        #expect(EchoedInput.clip("my-app") == "my-app")
        let clipped = EchoedInput.clip(String(repeating: "é", count: 1000))
        #expect(clipped.hasSuffix("...(2000 bytes)"))
        #expect(clipped.utf8.count <= EchoedInput.maxBytes + 20)
        #expect(clipped.hasPrefix(String(repeating: "é", count: 64)))
    }
}
