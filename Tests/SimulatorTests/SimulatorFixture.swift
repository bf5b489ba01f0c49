import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer
import SignedData

@testable import Simulator

/// ES256 with a Cryptography key, for AppStoreDomain's `AppStoreJWT`.
struct KeySigner: ES256Signer {
    let key: ECPrivateKey
    func sign(_ signingInput: [UInt8]) throws -> [UInt8] { try key.signature(for: signingInput) }
}

/// A simulator with two apps around a manual clock, and helpers to call it like the gateway would.
struct SimulatorFixture {
    static let referenceTime = WallTime(millisecondsSince1970: 1_750_000_000_000)
    /// One PKI for the whole test run: key generation is the slow part.
    static let sharedPKI: SimulatorPKI = {
        do {
            return try SimulatorPKI(
                generatingAround: Date(timeIntervalSince1970: 1_750_000_000), serialSeed: 7)
        } catch {
            preconditionFailure("test PKI: \(error)")
        }
    }()
    static let appKey: ECPrivateKey = {
        do { return try ECPrivateKey(generatingOn: .p256) } catch { preconditionFailure("key: \(error)") }
    }()
    static let otherAppKey: ECPrivateKey = {
        do { return try ECPrivateKey(generatingOn: .p256) } catch { preconditionFailure("key: \(error)") }
    }()

    static func publicKey(_ key: ECPrivateKey) -> ECPublicKey {
        do { return try key.publicKey } catch { preconditionFailure("public key: \(error)") }
    }

    let clock: ManualClock
    let simulator: AppStoreSimulator
    let app: SimulatedApp
    let otherApp: SimulatedApp

    init(
        seed: UInt64 = 42, customers: Int = 12, rateLimitScale: Double = 100, faults: [FaultRule] = [],
        paginationTokenLifetime: Duration = .seconds(3600), retentionDirectory: URL? = nil,
        performanceTestSender: PerformanceTestSender? = nil
    ) {
        clock = ManualClock(wall: Self.referenceTime)
        app = SimulatedApp(
            name: "example", bundleId: "com.example.app", appAppleId: 1_234_567_890,
            issuerId: "57246542-96fe-1a63-e053-0824d011072a", keyId: "ABCDEFGHIJ",
            publicKey: Self.publicKey(Self.appKey))
        otherApp = SimulatedApp(
            name: "other", bundleId: "com.example.other", appAppleId: 987_654_321,
            issuerId: "57246542-96fe-1a63-e053-0824d011072a", keyId: "KLMNOPQRST",
            publicKey: Self.publicKey(Self.otherAppKey))
        var configuration = SimulatorConfiguration(
            seed: seed, customersPerApp: customers, apps: [app, otherApp], referenceTime: Self.referenceTime,
            rateLimitScale: rateLimitScale, faults: faults, paginationTokenLifetime: paginationTokenLifetime,
            clock: clock, sleep: { _ in })
        configuration.retentionDirectory = retentionDirectory
        configuration.performanceTestSender = performanceTestSender ?? PerformanceTestSenders.simulated
        simulator = AppStoreSimulator(configuration: configuration, pki: Self.sharedPKI)
    }

    /// A valid bearer token for `app` minted now.
    func token(for app: SimulatedApp? = nil, key: ECPrivateKey? = nil, lifetime: Duration = .seconds(300)) -> String {
        let app = app ?? self.app
        let identity = JWTIdentity(issuerID: app.issuerId, keyID: app.keyId, bundleID: app.bundleId)
        let signingKey = key ?? (app.keyId == self.app.keyId ? Self.appKey : Self.otherAppKey)
        do {
            return try AppStoreJWT.mint(
                identity: identity, now: clock.wallNow(),
                settings: JWTSettings(issuedAtSkew: .zero, lifetime: lifetime, refreshMargin: .zero),
                signer: KeySigner(key: signingKey)
            ).token
        } catch {
            preconditionFailure("JWT: \(error)")
        }
    }

    /// Sends a request with a valid token unless `authorization` is given.
    func send(
        _ method: String, _ target: String, body: String? = nil, headers: [(name: String, value: String)] = [],
        authorization: String? = nil
    ) async -> HTTPResponse {
        var all = headers
        all.append(("authorization", authorization ?? "Bearer \(token())"))
        return await simulator.handle(
            HTTPRequest(method: method, target: target, headers: all, body: body.map { Array($0.utf8) } ?? []))
    }

    /// The response body as a JSON object.
    static func object(_ response: HTTPResponse) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]) ?? [:]
    }

    /// The decoded payload of a compact JWS (not verified).
    static func payload(_ jws: String) -> [String: Any] {
        let parts = jws.split(separator: ".").map(String.init)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]) else { return [:] }
        return ((try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]) ?? [:]
    }

    /// The production dataset of the main app.
    var dataset: SimulatedDataset {
        guard let dataset = simulator.dataset(bundleId: app.bundleId, environment: .production) else {
            preconditionFailure("dataset")
        }
        return dataset
    }

    /// The customer with the longest history.
    var busiestCustomer: SimulatedCustomer {
        dataset.customers.max { $0.transactions.count < $1.transactions.count } ?? dataset.customers[0]
    }
}
