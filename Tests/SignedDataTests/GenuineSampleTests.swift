import Cryptography
import Foundation
import GatewayFoundation
import Testing

@testable import SignedData

@Suite struct GenuineSampleTests {
    let verifier: SignedDataVerifier

    init() throws {
        verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [Fixture.appleRoot()]))
    }

    /// signedDate (ms) of each genuine file, from the testdata README.
    static let signedDates: [String: Int64] = [
        "notification-Sandbox-1": 1_662_122_492_884, "notification-Sandbox-2": 1_733_469_915_974,
        "notification-Sandbox-3": 1_757_035_472_686, "notification-Sandbox-4": 1_759_302_518_835,
        "notification-Sandbox-5": 1_759_388_776_941, "notification-Sandbox-6": 1_759_388_855_473,
        "notification-Sandbox-7": 1_759_389_041_604, "notification-Sandbox-8": 1_759_727_799_810,
        "notification-Sandbox-9": 1_759_727_838_450, "notification-Sandbox-10": 1_760_591_941_117,
        "notification-Sandbox-11": 1_760_592_122_788, "notification-Production-1": 1_729_136_651_128,
        "transaction-Sandbox-1": 1_759_302_518_835, "transaction-Sandbox-2": 1_759_727_785_445,
        "transaction-Sandbox-3": 1_760_592_122_788, "transaction-Unspecified-1": 1_636_464_323_732,
        "transaction-Unspecified-2": 1_636_465_081_044, "renewal-Unspecified-1": 1_636_464_323_732,
        "renewal-Sandbox-1": 1_684_822_778_492, "renewal-Sandbox-2": 1_759_302_518_835,
        "renewal-Sandbox-3": 1_759_388_855_473,
    ]

    static func kind(of name: String) -> SignedDataKind {
        if name.hasPrefix("notification") { return .notification }
        if name.hasPrefix("transaction") { return .transaction }
        return .renewalInfo
    }

    @Test func all21SamplesArePresent() {
        #expect(Fixture.genuineNames.count == 21)
        #expect(Set(Fixture.genuineNames) == Set(Self.signedDates.keys))
    }

    @Test(arguments: Array(signedDates.keys).sorted())
    func genuineSampleVerifies(name: String) throws {
        let jws = try Fixture.jws(name)
        let result = verifier.verify(jws)
        #expect(result.status == .ok, "\(name): \(result.message)")
        #expect(result.kind == Self.kind(of: name))
        let milliseconds = try #require(Self.signedDates[name])
        #expect(result.signedDate == Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000))
        let raw = try #require(result.rawJSON)
        #expect(jws.split(separator: ".")[1] == Substring(Base64.encode(raw, variant: .urlSafeUnpadded)))
        // Asking for the right kind passes; any other kind is wrongKind.
        #expect(verifier.verify(jws, kind: Self.kind(of: name)).status == .ok)
        for other in SignedDataKind.allCases where other != Self.kind(of: name) {
            #expect(verifier.verify(jws, kind: other).status == .wrongKind)
        }
    }

    @Test(arguments: Array(signedDates.keys).sorted())
    func environmentBinding(name: String) throws {
        let jws = try Fixture.jws(name)
        let sandbox = try VerificationRequirements(environment: .sandbox)
        let expected: VerificationVerdict = name.contains("Sandbox") ? .ok : .invalidEnvironment
        #expect(verifier.verify(jws, requirements: sandbox).status == expected, "\(name)")
        if name.contains("Unspecified") {
            #expect(verifier.verify(jws, requirements: sandbox).message.contains("absent"))
        }
    }

    @Test func bundleAndAppAppleIDBinding() throws {
        let loki = "com.loki-project.loki-messenger"
        let transaction = try Fixture.jws("transaction-Sandbox-3")
        #expect(verifier.verify(transaction, requirements: try .init(bundleID: loki, environment: .sandbox)).isVerified)
        let wrongBundle = verifier.verify(transaction, requirements: try .init(bundleID: "com.example.other"))
        #expect(wrongBundle.status == .invalidAppIdentifier)
        #expect(wrongBundle.message.contains("com.example.other"))
        #expect(
            verifier.verify(transaction, requirements: try .init(environment: .production)).status
                == .invalidEnvironment)

        let production = try Fixture.jws("notification-Production-1")
        let taller = try VerificationRequirements(
            bundleID: "com.nineton.taller", appAppleID: 6_450_284_872, environment: .production)
        #expect(verifier.verify(production, requirements: taller).isVerified)
        let wrongID = try VerificationRequirements(
            bundleID: "com.nineton.taller", appAppleID: 1, environment: .production)
        #expect(verifier.verify(production, requirements: wrongID).status == .invalidAppIdentifier)
        // Production without an app Apple id cannot be bound, as in Apple's libraries.
        #expect(throws: SignedDataConfigurationError.self) {
            try VerificationRequirements(bundleID: "com.nineton.taller", environment: .production)
        }
        let bundleOnly = try VerificationRequirements(bundleID: "com.nineton.taller")
        #expect(verifier.verify(production, requirements: bundleOnly).status == .invalidAppIdentifier)
        // Renewal info carries no bundle id, so only the environment binds it.
        let renewal = try Fixture.jws("renewal-Sandbox-2")
        #expect(
            verifier.verify(renewal, requirements: try .init(bundleID: "any.bundle", environment: .sandbox)).isVerified)
    }

    @Test func notificationNestedPayloadsAreVerified() throws {
        let result = verifier.verify(try Fixture.jws("notification-Sandbox-4"))
        #expect(result.isVerified)
        #expect(result.nestedPayloads.map(\.field) == [.signedTransactionInfo, .signedRenewalInfo])
        #expect(result.nestedPayloads.allSatisfy { $0.result.isVerified })
        let transaction = verifier.verify(try Fixture.jws("transaction-Sandbox-1"))
        let renewal = verifier.verify(try Fixture.jws("renewal-Sandbox-2"))
        #expect(result.nestedPayloads[0].result.rawJSON == transaction.rawJSON)
        #expect(result.nestedPayloads[1].result.rawJSON == renewal.rawJSON)
        #expect(result.nestedPayloads[0].result.kind == .transaction)
    }

    @Test func validatingAtNowRejectsExpiredLeaves() throws {
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [try Fixture.appleRoot()])
        configuration.validationTime = .now
        let atNow = try SignedDataVerifier(
            configuration: configuration, clock: ManualClock(Date(timeIntervalSince1970: 1_767_225_600)))  // 2026-01-01
        let old = atNow.verify(try Fixture.jws("renewal-Sandbox-1"))  // L2021 leaf, expired 2023-09-24
        #expect(old.status == .untrustedChain)
        #expect(old.message.contains("expired"))
        #expect(atNow.verify(try Fixture.jws("renewal-Sandbox-2")).isVerified)  // L2025 leaf
    }

    @Test func anotherRootIsUntrusted() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]))
        let result = verifier.verify(try Fixture.jws("transaction-Sandbox-1"))
        #expect(result.status == .untrustedChain)
        #expect(result.rawJSON == nil)
    }
}
