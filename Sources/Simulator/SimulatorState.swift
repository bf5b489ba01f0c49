import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation

/// The simulator's state directory: what makes a restart serve the same histories, and what a gateway
/// needs to talk to it. Layout (all paths relative to the directory):
///
///     seed.json                      seed, reference time, customers per app, the apps (no secrets)
///     pki/root.pem, root.cer         JWS root (P-384), PEM and DER: the gateway's verification root
///     pki/intermediate.pem, pki/leaf.pem      JWS chain (P-384 CA pathlen 0, P-256 leaf, Apple's OIDs)
///     pki/*.key.pem                  their PKCS#8 keys (0600)
///     SubscriptionKey_<KEYID>.p8     one In-App Purchase key per app (0600), beside gateway.yaml
///     tls/ca.pem, tls/ca.key.pem     TLS CA (`apple.caFile`)
///     tls/server.pem, server.key.pem TLS server certificate (SAN localhost, 127.0.0.1), from `issueTLSServerCertificate`
///     gateway.yaml                   a complete gateway configuration, from `writeGatewayConfiguration`
///     resume-token-keys              its resume-token key ring (0600), made once
///     transactions.json              sample ids per app and environment, from `writeTransactionIndex`
///     retention/                     Retention Messaging uploads and settings (`RetentionMessagingEndpoints`)
package struct SimulatorState: Sendable {
    /// What the state directory is written or read from.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package var description: String
    }

    /// One app in `seed.json`.
    package struct AppRecord: Codable, Sendable, Hashable {
        package var name: String
        package var bundleId: String
        package var appAppleId: Int64
        package var issuerId: String
        package var keyId: String
    }

    private struct SeedFile: Codable {
        var seed: UInt64
        var referenceTime: Int64
        var customersPerApp: Int
        var apps: [AppRecord]
    }

    /// TLS credentials for the wire layer.
    package struct TLSCredentials: Sendable, Hashable {
        package var certificatePath: String
        package var privateKeyPath: String
        /// The CA to trust (`apple.caFile`).
        package var caCertificatePath: String
    }

    package let directory: URL
    package let seed: UInt64
    package let referenceTime: WallTime
    package let customersPerApp: Int
    package let apps: [SimulatedApp]
    package let pki: SimulatorPKI

    /// Opens `directory`, creating it on first use with a new seed (or `seed`), `appCount` apps
    /// (`example`, `example2`, …) and a PKI around the clock's now. Existing state wins over the arguments.
    package static func openOrCreate(
        directory: String, seed: UInt64? = nil, customersPerApp: Int = 25, appCount: Int = 1,
        clock: any GatewayClock = SystemClock()
    ) throws(Failure) -> SimulatorState {
        let url = URL(fileURLWithPath: directory, isDirectory: true)
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("seed.json").path) {
            return try load(url)
        }
        return try create(
            url, seed: seed ?? UInt64.random(in: 1...UInt64.max >> 1), customersPerApp: customersPerApp,
            appCount: max(1, appCount), now: clock.wallNow())
    }

    /// A simulator serving this state; `customize` adjusts the rest (clock, rate limits, faults).
    package func makeSimulator(customize: (inout SimulatorConfiguration) -> Void = { _ in }) -> AppStoreSimulator {
        var configuration = SimulatorConfiguration(
            seed: seed, customersPerApp: customersPerApp, apps: apps, referenceTime: referenceTime)
        configuration.retentionDirectory = directory.appendingPathComponent("retention", isDirectory: true)
        customize(&configuration)
        return AppStoreSimulator(configuration: configuration, pki: pki)
    }

    /// Writes `transactions.json`: per app and environment, each customer's app transaction id and
    /// first transaction id, so a person (or a black-box test) has ids to ask about. Returns its path.
    @discardableResult
    package func writeTransactionIndex(from simulator: AppStoreSimulator) throws(Failure) -> String {
        var apps: [(String, OrderedJSON)] = []
        for app in self.apps {
            var environments: [(String, OrderedJSON)] = []
            for environment in AppleEnvironment.allCases {
                let customers = simulator.dataset(bundleId: app.bundleId, environment: environment)?.customers ?? []
                environments.append(
                    (
                        environment.appleName,
                        .array(
                            customers.map { customer in
                                .object([
                                    ("appTransactionId", .string(customer.appTransactionId)),
                                    ("transactionId", .string(customer.transactions.first?.transactionId ?? "")),
                                    ("transactions", .integer(Int64(customer.transactions.count))),
                                    ("orderId", .string(customer.transactions.first.map(SimulatedOrder.id(of:)) ?? "")),
                                    ("refunds", .integer(Int64(customer.transactions.filter(\.isRevoked).count))),
                                    (
                                        "activeSubscriptions",
                                        .array(
                                            customer.renewals.filter { $0.status == 1 }.map {
                                                .object([
                                                    ("originalTransactionId", .string($0.originalTransactionId)),
                                                    ("productId", .string($0.productId)),
                                                ])
                                            })
                                    ),
                                ])
                            })
                    ))
            }
            apps.append((app.bundleId, .object(environments)))
        }
        let target = directory.appendingPathComponent("transactions.json")
        try Self.write(OrderedJSON.object(apps).encodedText + "\n", to: target)
        return target.path
    }

    /// The path of a file in the state directory.
    package func path(_ relative: String) -> String { directory.appendingPathComponent(relative).path }

    /// Path of an app's `.p8` key.
    package func privateKeyPath(keyId: String) -> String { path("SubscriptionKey_\(keyId).p8") }

    private static func create(_ url: URL, seed: UInt64, customersPerApp: Int, appCount: Int, now: WallTime)
        throws(Failure) -> SimulatorState
    {
        var random = DeterministicRandom(seed: seed, stream: "apps")
        let letters = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        var records: [AppRecord] = []
        var apps: [SimulatedApp] = []
        try createDirectory(url.appendingPathComponent("pki"))
        for index in 0..<appCount {
            let suffix = index == 0 ? "" : String(index + 1)
            let record = AppRecord(
                name: "example\(suffix)", bundleId: "com.example.app\(suffix)",
                appAppleId: Int64(random.int(1_000_000_000...1_999_999_999)), issuerId: random.uuid(),
                keyId: String((0..<10).map { _ in random.pick(letters) }))
            let key = try attempt { try ECPrivateKey(generatingOn: .p256) }
            let keyPath = url.appendingPathComponent("SubscriptionKey_\(record.keyId).p8")
            try write(try attempt { try key.pkcs8PEM() }, to: keyPath, secret: true)
            records.append(record)
            apps.append(try app(record, key: key))
        }
        let referenceDate = Date(timeIntervalSince1970: TimeInterval(now.millisecondsSince1970) / 1000)
        let pki = try attempt { try SimulatorPKI(generatingAround: referenceDate, serialSeed: seed) }
        let pkiDirectory = url.appendingPathComponent("pki")
        try write(pki.root.certificate.pemEncoded, to: pkiDirectory.appendingPathComponent("root.pem"))
        try writeBytes(pki.root.certificate.derBytes, to: pkiDirectory.appendingPathComponent("root.cer"))
        try write(pki.intermediate.certificate.pemEncoded, to: pkiDirectory.appendingPathComponent("intermediate.pem"))
        try write(pki.leaf.pemEncoded, to: pkiDirectory.appendingPathComponent("leaf.pem"))
        for (name, key) in [
            ("root", pki.root.privateKey), ("intermediate", pki.intermediate.privateKey),
            ("leaf", pki.leafKey),
        ] {
            try write(
                try attempt { try key.pkcs8PEM() }, to: pkiDirectory.appendingPathComponent("\(name).key.pem"),
                secret: true)
        }
        let seedFile = SeedFile(
            seed: seed, referenceTime: now.millisecondsSince1970, customersPerApp: customersPerApp, apps: records)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let json = try? encoder.encode(seedFile) else { throw Failure(description: "cannot encode seed.json") }
        try writeBytes(Array(json), to: url.appendingPathComponent("seed.json"))
        return SimulatorState(
            directory: url, seed: seed, referenceTime: now, customersPerApp: customersPerApp, apps: apps, pki: pki)
    }

    private static func load(_ url: URL) throws(Failure) -> SimulatorState {
        let seedData = try read(url.appendingPathComponent("seed.json"))
        guard let seedFile = try? JSONDecoder().decode(SeedFile.self, from: Data(seedData.utf8)) else {
            throw Failure(description: "\(url.path)/seed.json is not a simulator seed file")
        }
        var apps: [SimulatedApp] = []
        for record in seedFile.apps {
            let pem = try read(url.appendingPathComponent("SubscriptionKey_\(record.keyId).p8"))
            apps.append(try app(record, key: try attempt { try ECPrivateKey(pkcs8PEM: pem) }))
        }
        let pkiDirectory = url.appendingPathComponent("pki")
        func certificate(_ name: String) throws(Failure) -> Certificate {
            let pem = try read(pkiDirectory.appendingPathComponent("\(name).pem"))
            return try attempt { try Certificate(pemEncoded: pem) }
        }
        func key(_ name: String) throws(Failure) -> ECPrivateKey {
            let pem = try read(pkiDirectory.appendingPathComponent("\(name).key.pem"))
            return try attempt { try ECPrivateKey(pkcs8PEM: pem) }
        }
        let pki = SimulatorPKI(
            root: CertificateIssuer(certificate: try certificate("root"), privateKey: try key("root")),
            intermediate: CertificateIssuer(
                certificate: try certificate("intermediate"), privateKey: try key("intermediate")),
            leaf: try certificate("leaf"), leafKey: try key("leaf"))
        return SimulatorState(
            directory: url, seed: seedFile.seed,
            referenceTime: WallTime(millisecondsSince1970: seedFile.referenceTime),
            customersPerApp: seedFile.customersPerApp, apps: apps, pki: pki)
    }

    private static func app(_ record: AppRecord, key: ECPrivateKey) throws(Failure) -> SimulatedApp {
        SimulatedApp(
            name: record.name, bundleId: record.bundleId, appAppleId: record.appAppleId, issuerId: record.issuerId,
            keyId: record.keyId, publicKey: try attempt { try key.publicKey })
    }

    static func attempt<T>(_ body: () throws -> T) throws(Failure) -> T {
        do {
            return try body()
        } catch {
            throw Failure(description: String(describing: error))
        }
    }

    static func createDirectory(_ url: URL) throws(Failure) {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "cannot create \(url.path): \(error)")
        }
    }

    static func read(_ url: URL) throws(Failure) -> String {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw Failure(description: "cannot read \(url.path)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func write(_ text: String, to url: URL, secret: Bool = false) throws(Failure) {
        try writeBytes(Array(text.utf8), to: url, secret: secret)
    }

    /// Writes atomically; secrets are created with mode 0600 before any byte is written.
    static func writeBytes(_ bytes: [UInt8], to url: URL, secret: Bool = false) throws(Failure) {
        let attributes: [FileAttributeKey: Any]? = secret ? [.posixPermissions: 0o600] : nil
        let temporary = url.path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(bytes), attributes: attributes) else {
            throw Failure(description: "cannot write \(url.path)")
        }
        if rename(temporary, url.path) != 0 { throw Failure(description: "cannot rename into \(url.path)") }
    }
}
