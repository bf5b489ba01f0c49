import AppStoreClient
import AppStoreDomain
import Foundation
import GatewayFoundation
import ProtoCodec

/// CreateInAppSignature: the JWS StoreKit takes for an Advanced Commerce in-app purchase or change (Apple's
/// "Generating JWS to sign App Store requests"): audience "advanced-commerce-api", claim `request` = standard
/// base64 (padded) of the request's JSON, signed with the app's key, which stays in the gateway. No Apple call.
struct InAppSignatureHandler: Sendable {
    /// The JWS audience of Advanced Commerce in-app requests.
    static let audience = "advanced-commerce-api"

    let client: AppStoreAPIClient

    /// The signed request; INVALID_ARGUMENT names every field past the contract.
    func sign(_ request: CreateInAppSignatureRequest) throws(GatewayError) -> SignedJWSResponse {
        let json = try Self.requestJSON(request)
        let app = try client.apps.app(named: request.app)
        let nonce = UUID().uuidString.lowercased()
        let issuedAt = client.nowMilliseconds / 1000
        let encoded = Data(json.bytes).base64EncodedString()
        let jws = try client.storeKitJWS(
            app: app, audience: Self.audience, claims: [("request", JSONString.quoted(encoded))], nonce: nonce,
            issuedAt: issuedAt)
        return SignedJWSResponse(jws: jws, nonce: nonce, issuedAt: issuedAt)
    }

    /// The in-app request's JSON as Apple's models write it (`operation`, `version`, then the request's members),
    /// checked against the contract.
    static func requestJSON(_ request: CreateInAppSignatureRequest) throws(GatewayError) -> AdvancedCommerceJSON {
        var contract = RequestContract()
        contract.length(request.app, field: "app", max: RequestContract.maxAppBytes)
        let json: AdvancedCommerceJSON
        switch request.request {
        case .oneTimeCharge(let charge)?: json = charge.json("one_time_charge", &contract)
        case .createSubscription(let create)?: json = create.json("create_subscription", &contract)
        case .modifySubscription(let modify)?: json = modify.json("modify_subscription", &contract)
        case .reactivateSubscription(let reactivate)?: json = reactivate.json("reactivate_subscription", &contract)
        case nil:
            contract.refuse(
                "request",
                "is required: one_time_charge, create_subscription, modify_subscription or reactivate_subscription")
            json = .object([])
        }
        try contract.check()
        return json
    }
}
