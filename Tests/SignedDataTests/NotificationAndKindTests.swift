import Cryptography
import Foundation
import Testing

@testable import SignedData

@Suite struct NotificationAndKindTests {
    let pki: AppStoreTestPKI
    let clock = ManualClock(referenceTime)
    let verifier: SignedDataVerifier

    init() throws {
        pki = try AppStoreTestPKI(referenceTime: referenceTime)
        verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]), clock: clock)
    }

    private func notification(_ body: [String: Any]) throws -> String {
        var payload: [String: Any] = [
            "notificationType": "DID_RENEW", "notificationUUID": "00000000-0000-0000-0000-000000000001",
            "version": "2.0", "signedDate": referenceMilliseconds,
        ]
        payload.merge(body) { $1 }
        return try pki.signer.sign(payload: json(payload))
    }

    @Test func nestedTransactionIsVerifiedAndItsFailureReported() throws {
        let inner = try pki.signer.sign(payload: transactionPayload())
        let good = try notification([
            "data": [
                "bundleId": "com.example.app", "environment": "Sandbox", "appAppleId": 42,
                "signedTransactionInfo": inner,
            ]
        ])
        let result = verifier.verify(good, requirements: try .init(bundleID: "com.example.app", environment: .sandbox))
        #expect(result.isVerified, "\(result.message)")
        #expect(result.nestedPayloads.count == 1)
        #expect(result.nestedPayloads.first?.result.rawJSON == transactionPayload())

        let impostor = try AppStoreTestPKI(referenceTime: referenceTime)
        let forgedInner = try impostor.signer.sign(payload: transactionPayload())
        let bad = try notification(["data": ["bundleId": "com.example.app", "signedTransactionInfo": forgedInner]])
        let rejected = verifier.verify(bad)
        #expect(rejected.status == .untrustedChain)
        #expect(rejected.message.hasPrefix("signedTransactionInfo:"))
        #expect(rejected.kind == .notification)

        let renewalAsTransaction = try notification([
            "data": [
                "bundleId": "com.example.app",
                "signedTransactionInfo": try pki.signer.sign(
                    payload: json([
                        "originalTransactionId": "1", "autoRenewStatus": 1, "signedDate": referenceMilliseconds,
                    ])),
            ]
        ])
        #expect(verifier.verify(renewalAsTransaction).status == .wrongKind)
    }

    /// The webhook verifies a notification bound to no app, then binds the result to the app it names
    /// (`bind(_:to:)`, nothing verified again): every verdict and message must be what verifying under those
    /// requirements gives, for the payload's own identity and for each nested payload's.
    @Test func bindingAVerifiedResultAgreesWithVerifyingUnderTheRequirements() throws {
        let inner = try pki.signer.sign(payload: transactionPayload())
        let otherApp = try pki.signer.sign(payload: transactionPayload(bundleID: "com.example.other"))
        let production = try pki.signer.sign(payload: transactionPayload(environment: "Production"))
        let notifications = [
            try notification([
                "data": [
                    "bundleId": "com.example.app", "environment": "Sandbox", "appAppleId": 42,
                    "signedTransactionInfo": inner,
                ]
            ]),
            try notification([
                "data": [
                    "bundleId": "com.example.app", "environment": "Sandbox", "appAppleId": 42,
                    "signedTransactionInfo": otherApp,
                ]
            ]),
            try notification([
                "data": [
                    "bundleId": "com.example.app", "environment": "Sandbox", "appAppleId": 42,
                    "signedTransactionInfo": production,
                ]
            ]),
            try notification(["summary": ["bundleId": "com.example.app", "environment": "Production", "appAppleId": 7]]
            ),
            try notification(["data": ["bundleId": "com.example.other", "environment": "Sandbox"]]),
            try notification([:]),
        ]
        let requirements: [VerificationRequirements] = [
            .none,
            try .init(bundleID: "com.example.app", environment: .sandbox),
            try .init(bundleID: "com.example.app", appAppleID: 42, environment: .sandbox),
            try .init(bundleID: "com.example.app", appAppleID: 43, environment: .sandbox),
            try .init(bundleID: "com.example.app", appAppleID: 7, environment: .production),
            try .init(bundleID: "com.example.app", appAppleID: 7, acceptedEnvironments: [.production, .sandbox]),
            try .init(bundleID: "com.example.app", appAppleID: 8, acceptedEnvironments: [.production]),
            try .init(bundleID: "com.example.other", appAppleID: nil, acceptedEnvironments: [.sandbox]),
        ]
        var refusals = 0
        for jws in notifications {
            let unbound = verifier.verify(jws)
            #expect(unbound.isVerified, "\(unbound.message)")
            for requirement in requirements {
                let bound = try #require(verifier.bind(unbound, to: requirement))
                let verified = verifier.verify(jws, requirements: requirement)
                #expect(bound.status == verified.status, "\(verified.message) vs \(bound.message)")
                #expect(bound.message == verified.message)
                if !verified.isVerified { refusals += 1 }
            }
        }
        #expect(refusals >= 10, "the cases must refuse too, not only pass")
        // Nothing to bind: a failed verification, and requirements that accept Xcode's unverified data.
        let impostor = try AppStoreTestPKI(referenceTime: referenceTime)
        let forged = verifier.verify(try impostor.signer.sign(payload: transactionPayload()))
        #expect(verifier.bind(forged, to: .none) == nil)
        let xcode = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: nil, acceptedEnvironments: [.xcode, .sandbox]
        ).acceptingUnverified([.xcode])
        #expect(verifier.bind(verifier.verify(notifications[0]), to: xcode) == nil)
    }

    @Test func notificationIdentitySources() throws {
        let summary = try notification([
            "summary": ["bundleId": "com.example.app", "environment": "Production", "appAppleId": 7]
        ])
        let production = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: 7, environment: .production)
        #expect(verifier.verify(summary, requirements: production).isVerified)
        let otherID = try VerificationRequirements(bundleID: "com.example.app", appAppleID: 8, environment: .production)
        #expect(verifier.verify(summary, requirements: otherID).status == .invalidAppIdentifier)

        let sandboxToken = try notification([
            "externalPurchaseToken": [
                "externalPurchaseId": "SANDBOX_abc", "bundleId": "com.example.app", "appAppleId": 7,
                "tokenCreationDate": 1,
            ]
        ])
        #expect(
            verifier.verify(sandboxToken, requirements: try .init(bundleID: "com.example.app", environment: .sandbox))
                .isVerified)
        #expect(verifier.verify(sandboxToken, requirements: production).status == .invalidEnvironment)

        let appData = try notification([
            "appData": ["bundleId": "com.example.app", "environment": "Sandbox", "appAppleId": 7]
        ])
        #expect(
            verifier.verify(appData, requirements: try .init(bundleID: "com.example.other")).status
                == .invalidAppIdentifier)
        #expect(
            verifier.verify(appData, requirements: try .init(bundleID: "com.example.app", environment: .sandbox))
                .isVerified)

        let empty = try notification([:])
        #expect(verifier.verify(empty).isVerified)
        #expect(
            verifier.verify(empty, requirements: try .init(bundleID: "com.example.app")).status == .invalidAppIdentifier
        )
    }

    @Test func appTransactionUsesReceiptCreationDate() throws {
        let expiredLeaf = try pki.issueLeaf(notBefore: referenceTime - 60 * day, notAfter: referenceTime - 10 * day)
        let created = referenceMilliseconds - Int64(20 * day * 1000)
        let payload = json([
            "receiptType": "Production", "appAppleId": 9, "bundleId": "com.example.app",
            "receiptCreationDate": created, "originalPurchaseDate": created, "applicationVersion": "1",
        ])
        let result = verifier.verify(try expiredLeaf.sign(payload: payload), kind: .appTransaction)
        #expect(result.isVerified, "\(result.message)")
        #expect(result.kind == .appTransaction)
        #expect(result.signedDate == Date(timeIntervalSince1970: TimeInterval(created) / 1000))
        let production = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: 9, environment: .production)
        #expect(verifier.verify(try expiredLeaf.sign(payload: payload), requirements: production).isVerified)
        let sandbox = try VerificationRequirements(bundleID: "com.example.app", appAppleID: 9, environment: .sandbox)
        #expect(
            verifier.verify(try expiredLeaf.sign(payload: payload), requirements: sandbox).status == .invalidEnvironment
        )
    }

    @Test func missingSignedDateFallsBackToTheClock() throws {
        let payload = json(["transactionId": "1", "bundleId": "com.example.app", "environment": "Sandbox"])
        let token = try pki.signer.sign(payload: payload)
        #expect(verifier.verify(token).isVerified)
        clock.advance(by: 2 * 365 * day)  // past the leaf's notAfter
        let later = verifier.verify(token)
        #expect(later.status == .untrustedChain)
        #expect(later.signedDate == nil)
        let mistyped = try pki.signer.sign(payload: json(["transactionId": "1", "signedDate": "yesterday"]))
        #expect(verifier.verify(mistyped).status == .malformed)
    }
}
