import Foundation
import GatewayFoundation
import ProtoCodec
import Testing

@testable import SignedData

/// Compares verdicts and decoded fields with Apple's Python app-store-server-library on every genuine
/// sample. Runs only when the repository venv exists (`make venv` installs the library).
private let venvPython = Fixture.repository.appendingPathComponent(".venv/bin/python")

@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: venvPython.path)))
struct AppleLibraryOracleTests {
    /// Apple's field names → our decoding, rendered as Apple's raw values.
    static func appleView(_ payload: DecodedPayload) -> [String: String] {
        func ms(_ t: ProtoTimestamp?) -> String? { t.map { String($0.seconds * 1000 + Int64($0.nanos / 1_000_000)) } }
        func nonEmpty(_ s: String) -> String? { s.isEmpty ? nil : s }
        func number(_ raw: Int32, minus offset: Int32) -> String? { raw == 0 ? nil : String(raw - offset) }
        func environment(_ e: Environment) -> String? {
            [1: "Production", 2: "Sandbox", 3: "Xcode", 4: "LocalTesting"][e.rawValue]
        }
        var view: [String: String?] = [:]
        switch payload {
        case .transaction(let t):
            view = [
                "transactionId": nonEmpty(t.transactionId), "originalTransactionId": nonEmpty(t.originalTransactionId),
                "webOrderLineItemId": nonEmpty(t.webOrderLineItemId), "bundleId": nonEmpty(t.bundleId),
                "productId": nonEmpty(t.productId),
                "subscriptionGroupIdentifier": nonEmpty(t.subscriptionGroupIdentifier),
                "purchaseDate": ms(t.purchaseDate), "originalPurchaseDate": ms(t.originalPurchaseDate),
                "expiresDate": ms(t.expiresDate), "quantity": t.quantity == 0 ? nil : String(t.quantity),
                // Apple's raw strings against the `_raw` fields: equal whether or not this release knows the value.
                "rawType": nonEmpty(t.typeRaw), "rawInAppOwnershipType": nonEmpty(t.inAppOwnershipTypeRaw),
                "signedDate": ms(t.signedDate), "rawRevocationReason": number(t.revocationReason.rawValue, minus: 1),
                "revocationDate": ms(t.revocationDate), "rawOfferType": number(t.offerType.rawValue, minus: 0),
                "offerIdentifier": nonEmpty(t.offerIdentifier), "rawEnvironment": nonEmpty(t.environmentRaw),
                "storefront": nonEmpty(t.storefront), "storefrontId": nonEmpty(t.storefrontId),
                "rawTransactionReason": nonEmpty(t.transactionReasonRaw),
                "rawOfferDiscountType": nonEmpty(t.offerDiscountTypeRaw),
                "rawRevocationType": nonEmpty(t.revocationTypeRaw),
                "rawBillingPlanType": nonEmpty(t.billingPlanTypeRaw),
                "currency": nonEmpty(t.currency), "price": t.priceMilliunits == 0 ? nil : String(t.priceMilliunits),
                "appTransactionId": nonEmpty(t.appTransactionId), "offerPeriod": nonEmpty(t.offerPeriod),
                "appAccountToken": nonEmpty(t.appAccountToken),
            ]
        case .renewalInfo(let r):
            view = [
                "originalTransactionId": nonEmpty(r.originalTransactionId), "productId": nonEmpty(r.productId),
                "autoRenewProductId": nonEmpty(r.autoRenewProductId),
                "rawAutoRenewStatus": number(r.autoRenewStatus.rawValue, minus: 1),
                "rawExpirationIntent": number(r.expirationIntent.rawValue, minus: 0),
                "rawPriceIncreaseStatus": number(r.priceIncreaseStatus.rawValue, minus: 1),
                "signedDate": ms(r.signedDate), "rawEnvironment": nonEmpty(r.environmentRaw),
                "rawOfferDiscountType": nonEmpty(r.offerDiscountTypeRaw),
                "rawRenewalBillingPlanType": nonEmpty(r.renewalBillingPlanTypeRaw),
                "recentSubscriptionStartDate": ms(r.recentSubscriptionStartDate), "renewalDate": ms(r.renewalDate),
                "renewalPrice": r.renewalPriceMilliunits == 0 ? nil : String(r.renewalPriceMilliunits),
                "currency": nonEmpty(r.currency), "appTransactionId": nonEmpty(r.appTransactionId),
                "gracePeriodExpiresDate": ms(r.gracePeriodExpiresDate), "offerIdentifier": nonEmpty(r.offerIdentifier),
            ]
        case .notification(let n):
            view = [
                "rawNotificationType": nonEmpty(n.notificationTypeRaw), "rawSubtype": nonEmpty(n.subtypeRaw),
                "notificationUUID": nonEmpty(n.notificationUuid), "version": nonEmpty(n.version),
                "signedDate": ms(n.signedDate), "data.bundleId": n.data.flatMap { nonEmpty($0.bundleId) },
                "data.appAppleId": n.data.flatMap { $0.appAppleId == 0 ? nil : String($0.appAppleId) },
                "data.bundleVersion": n.data.flatMap { nonEmpty($0.bundleVersion) },
                "data.rawEnvironment": n.data.flatMap { nonEmpty($0.environmentRaw) },
                "data.rawStatus": n.data.flatMap { number($0.status.rawValue, minus: 0) },
                "data.rawConsumptionRequestReason": n.data.flatMap { nonEmpty($0.consumptionRequestReasonRaw) },
            ]
        case .appTransaction, .realtimeRequest:
            view = [:]
        }
        return view.compactMapValues { $0 }
    }

    /// Flattens Python's output to the same "key" / "data.key" → text form.
    static func flatten(_ object: [String: Any], prefix: String = "") -> [String: String] {
        var flat: [String: String] = [:]
        for (key, value) in object {
            switch value {
            case let nested as [String: Any]: flat.merge(flatten(nested, prefix: prefix + key + ".")) { $1 }
            case let text as String: flat[prefix + key] = text
            case let number as NSNumber: flat[prefix + key] = number.stringValue
            default: break
            }
        }
        return flat
    }

    @Test func verdictsAndFieldsMatchApplesLibrary() throws {
        let names = Fixture.genuineNames
        let process = Process()
        process.executableURL = venvPython
        process.arguments =
            [
                Fixture.repository.appendingPathComponent("Tests/SignedDataTests/Oracle/apple_library_decode.py").path,
                Fixture.repository.appendingPathComponent("certs/AppleRootCA-G3.cer").path,
            ] + names.map { Fixture.directory.appendingPathComponent($0 + ".jws").path }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the oracle script failed")
        let parsed = try JSONSerialization.jsonObject(with: data)
        let oracle = try #require(parsed as? [String: [String: Any]])

        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [Fixture.appleRoot()]))
        var compared = 0
        for name in names {
            let entry = try #require(oracle[name], "\(name) missing from the oracle's output")
            let jws = try Fixture.jws(name)
            // The same binding Apple's library was given: the payload's own identity, Sandbox for legacy data.
            let unbound = verifier.verify(jws)
            let raw = try #require(unbound.rawJSON)
            let payload = try #require(JSONValue.object(from: raw))
            let identity = payload["data"]?.object ?? payload
            let environment = AppStoreEnvironment(rawValue: identity["environment"]?.string ?? "Sandbox")
            let requirements = try VerificationRequirements(
                bundleID: unbound.kind == .renewalInfo ? nil : identity["bundleId"]?.string,
                appAppleID: identity["appAppleId"]?.int64, environment: environment)
            let result = verifier.verify(jws, requirements: requirements)
            let appleStatus = entry["status"] as? String
            let expected: VerificationVerdict? = [
                "OK": VerificationVerdict.ok, "INVALID_ENVIRONMENT": .invalidEnvironment,
                "INVALID_APP_IDENTIFIER": .invalidAppIdentifier,
            ][appleStatus ?? ""]
            #expect(result.status == expected, "\(name): Apple says \(appleStatus ?? "?"), we say \(result.status)")

            guard let decoded = entry["decoded"] as? [String: Any], let ours = PayloadDecoder.decode(result) else {
                continue
            }
            let theirs = Self.flatten(decoded)
            for (key, value) in Self.appleView(ours) {
                #expect(theirs[key] == value, "\(name).\(key): Apple \(theirs[key] ?? "absent"), ours \(value)")
                compared += 1
            }
        }
        #expect(compared > 150)
        print("Compared \(compared) decoded fields with app-store-server-library")
    }
}
