import Cryptography
import Foundation
import GatewayFoundation

/// One app the simulator serves, with the In-App Purchase key whose public half checks its JWTs.
package struct SimulatedApp: Sendable {
    /// The gateway's name for the app.
    package var name: String
    package var bundleId: String
    package var appAppleId: Int64
    /// The key's issuer id (UUID), checked against `iss`.
    package var issuerId: String
    /// The 10-character key id, checked against `kid`.
    package var keyId: String
    /// The public key that must verify every request JWT for this app.
    package var publicKey: ECPublicKey

    package init(
        name: String, bundleId: String, appAppleId: Int64, issuerId: String, keyId: String,
        publicKey: ECPublicKey
    ) {
        self.name = name
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.issuerId = issuerId
        self.keyId = keyId
        self.publicKey = publicKey
    }
}

/// Everything an `AppStoreSimulator` is built from. Defaults follow Apple; tests shrink them.
package struct SimulatorConfiguration: Sendable {
    /// Fixes every generated id, date and event.
    package var seed: UInt64
    /// Customers generated per app and environment. Default 25.
    package var customersPerApp: Int
    /// The apps served.
    package var apps: [SimulatedApp]
    /// "Now" of the generated histories (UNIX ms): nothing in them happens later. Persisted in the state
    /// directory so a restart serves the same data.
    package var referenceTime: WallTime
    /// Multiplies Apple's per-second rates (0.01 makes 50/s into 0.5/s so tests hit the limit at once).
    /// Default 1.
    package var rateLimitScale: Double
    /// The window over which a rate is enforced: the budget is rate × window requests, refilled at the
    /// rate. Apple quotes per second but enforces per hour; default 1 s (burst of one second's budget).
    package var rateLimitWindow: Duration
    /// Sandbox's share of the production budget. Default 0.1, as Apple.
    package var sandboxRateFactor: Double
    /// Faults injected without a request header.
    package var faults: [FaultRule]
    /// Whether the `x-simulator-fault` header is honoured. Default true.
    package var allowsFaultHeader: Bool
    /// How long a notification-history `paginationToken` stays valid. Default 1 hour.
    package var paginationTokenLifetime: Duration
    /// How far in the future a JWT's `iat` may be (clock skew). Default 60 s.
    package var allowedClockSkew: Duration
    /// The clock for JWT checks, rate limits, `signedDate` and token expiry.
    package var clock: any GatewayClock
    /// Sleeps for latency faults and slow responses (injected so tests need not wait).
    package var sleep: @Sendable (Duration) async -> Void
    /// Where `Request a Test Notification` delivers its TEST notification (nil: nowhere, as before).
    package var webhookURL: String?
    /// Apple's retry delays of webhook deliveries are divided by it. Default 3600 (an hour takes a second).
    package var webhookTimeFactor: Double = 3600
    /// Where the Retention Messaging API's uploads and settings are kept (nil: in memory only).
    /// `SimulatorState.makeSimulator` sets the state directory's `retention/`.
    package var retentionDirectory: URL?
    /// Sends a performance test's requests (the seam `PerformanceTestSender` describes). nil, the default: signed
    /// realtime requests go to the configured realtime URL, as Apple's test does; `PerformanceTestSenders.simulated`
    /// calls nothing.
    package var performanceTestSender: PerformanceTestSender?
    /// How many scripted lifecycles may live at once and how many steps each may take
    /// (`LifecycleLimits.defaults`: 1,000 and 200).
    package var lifecycleLimits: LifecycleLimits = .defaults

    /// A configuration; unspecified values take the documented defaults.
    package init(
        seed: UInt64, customersPerApp: Int = 25, apps: [SimulatedApp], referenceTime: WallTime? = nil,
        rateLimitScale: Double = 1, rateLimitWindow: Duration = .seconds(1), sandboxRateFactor: Double = 0.1,
        faults: [FaultRule] = [], allowsFaultHeader: Bool = true, paginationTokenLifetime: Duration = .seconds(3600),
        allowedClockSkew: Duration = .seconds(60), clock: any GatewayClock = SystemClock(),
        sleep: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) }
    ) {
        self.seed = seed
        self.customersPerApp = customersPerApp
        self.apps = apps
        self.referenceTime = referenceTime ?? clock.wallNow()
        self.rateLimitScale = rateLimitScale
        self.rateLimitWindow = rateLimitWindow
        self.sandboxRateFactor = sandboxRateFactor
        self.faults = faults
        self.allowsFaultHeader = allowsFaultHeader
        self.paginationTokenLifetime = paginationTokenLifetime
        self.allowedClockSkew = allowedClockSkew
        self.clock = clock
        self.sleep = sleep
    }
}
