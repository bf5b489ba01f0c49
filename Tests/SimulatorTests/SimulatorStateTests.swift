import AppStoreClient
import AppStoreDomain
import Configuration
import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer
import SignedData
import Testing

@testable import Simulator

@Suite struct SimulatorStateTests {
    static func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("simulator-\(UUID().uuidString)").path
        return path
    }

    @Test func restartServesTheSameHistoriesAndKeys() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock(wall: SimulatorFixture.referenceTime)
        let first = try SimulatorState.openOrCreate(directory: directory, customersPerApp: 5, appCount: 2, clock: clock)
        let second = try SimulatorState.openOrCreate(directory: directory, seed: 99, customersPerApp: 9, clock: clock)
        #expect(second.seed == first.seed && second.customersPerApp == 5 && second.apps.count == 2)
        #expect(second.pki.root.certificate == first.pki.root.certificate)
        #expect(second.pki.leaf == first.pki.leaf)
        #expect(second.apps.map(\.keyId) == first.apps.map(\.keyId))
        #expect(second.apps[0].publicKey == first.apps[0].publicKey)
        let a = first.makeSimulator { $0.clock = clock }
        let b = second.makeSimulator { $0.clock = clock }
        let bundleId = first.apps[0].bundleId
        #expect(
            a.dataset(bundleId: bundleId, environment: .production)?.customers
                == b.dataset(bundleId: bundleId, environment: .production)?.customers)
        for keyId in first.apps.map(\.keyId) {
            let attributes = try FileManager.default.attributesOfItem(atPath: first.privateKeyPath(keyId: keyId))
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }
        let leafKey = try FileManager.default.attributesOfItem(atPath: first.path("pki/leaf.key.pem"))
        #expect((leafKey[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(FileManager.default.fileExists(atPath: first.path("pki/root.cer")))
    }

    @Test func aSimulatorFromStateAcceptsTheWrittenKeys() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock(wall: SimulatorFixture.referenceTime)
        let state = try SimulatorState.openOrCreate(directory: directory, seed: 5, customersPerApp: 3, clock: clock)
        let simulator = state.makeSimulator { $0.clock = clock }
        let app = state.apps[0]
        let pem = try String(contentsOfFile: state.privateKeyPath(keyId: app.keyId), encoding: .utf8)
        let key = try ECPrivateKey(pkcs8PEM: pem)
        let token = try AppStoreJWT.mint(
            identity: JWTIdentity(issuerID: app.issuerId, keyID: app.keyId, bundleID: app.bundleId),
            now: clock.wallNow(),
            signer: KeySigner(key: key)
        ).token
        let id =
            simulator.dataset(bundleId: app.bundleId, environment: .production)?.customers[0].appTransactionId ?? ""
        let response = await simulator.handle(
            .init(
                method: "GET", target: "/inApps/v2/history/\(id)", headers: [("authorization", "Bearer \(token)")]))
        #expect(response.status == 200)
    }

    @Test func gatewayConfigurationLoadsAndPointsAtTheSimulator() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = try SimulatorState.openOrCreate(directory: directory, seed: 5, customersPerApp: 3, appCount: 2)
        let tls = try state.issueTLSServerCertificate()
        let path = try state.writeGatewayConfiguration(
            productionURL: "https://localhost:8443/", caFile: tls.caCertificatePath)
        #expect(path == state.path("gateway.yaml"))
        let yaml = try String(contentsOfFile: path, encoding: .utf8)
        let configuration = try GatewayConfiguration.load(yaml: yaml)
        #expect(configuration.apps.count == 2)
        #expect(configuration.apps.map(\.keyId) == state.apps.map(\.keyId))
        #expect(configuration.apps.allSatisfy { FileManager.default.fileExists(atPath: $0.privateKeyFile) })
        #expect(configuration.apple.productionURL == "https://localhost:8443")
        #expect(configuration.apple.sandboxURL == "https://localhost:8443/sandbox")
        #expect(configuration.apple.caFile == tls.caCertificatePath)
        #expect(configuration.verification.rootCertificates == [state.path("pki/root.pem")])
        let root = try Certificate(pemEncoded: try String(contentsOfFile: state.path("pki/root.pem"), encoding: .utf8))
        #expect(root == state.pki.root.certificate)
    }

    @Test func tlsServerCertificateChainsToTheCAWithSubjectAltNames() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = try SimulatorState.openOrCreate(directory: directory, seed: 5, customersPerApp: 1)
        let tls = try state.issueTLSServerCertificate()
        let ca = try Certificate(pemEncoded: try String(contentsOfFile: tls.caCertificatePath, encoding: .utf8))
        let server = try Certificate(pemEncoded: try String(contentsOfFile: tls.certificatePath, encoding: .utf8))
        #expect(server.hasExtension(oid: "2.5.29.17"))
        #expect(try server.publicKey().curve == .p256)
        let key = try ECPrivateKey(pkcs8PEM: try String(contentsOfFile: tls.privateKeyPath, encoding: .utf8))
        #expect(try key.publicKey == server.publicKey())
        let validator = try CertificateChainValidator(trustedRoots: [ca])
        if case .invalid(let failure) = validator.validate(leaf: server, intermediates: [], at: Date()) {
            Issue.record("TLS chain: \(failure)")
        }
        // Re-issuing keeps the CA.
        let again = try state.issueTLSServerCertificate()
        #expect(try String(contentsOfFile: again.caCertificatePath, encoding: .utf8) == ca.pemEncoded)
    }
}

@Suite struct TransactionIndexTests {
    @Test func indexListsEveryCustomer() throws {
        let directory = SimulatorStateTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = try SimulatorState.openOrCreate(directory: directory, seed: 5, customersPerApp: 4)
        let simulator = state.makeSimulator()
        let path = try state.writeTransactionIndex(from: simulator)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: [String: [[String: Any]]]]
        let production = object?[state.apps[0].bundleId]?["Production"] ?? []
        #expect(production.count == 4)
        let id = production.first?["transactionId"] as? String ?? ""
        #expect(simulator.dataset(bundleId: state.apps[0].bundleId, environment: .production)?.transaction(id) != nil)
    }
}
