import AppStoreClient
import AppStoreDomain
import Foundation
import GatewayFoundation
import ProtoCodec

/// CreatePromotionalOfferSignature, CreatePromotionalOfferV2Signature and
/// CreateIntroductoryOfferEligibilitySignature: StoreKit's signatures made with the app's key, which stays in the
/// gateway. CPU work of one ECDSA signature; no Apple call.
struct OfferSigningHandler: Sendable {
    let client: AppStoreAPIClient

    /// The StoreKit 1 signature; an empty nonce is generated, a zero timestamp is now.
    func promotionalOffer(
        _ request: CreatePromotionalOfferSignatureRequest
    ) throws(GatewayError) -> CreatePromotionalOfferSignatureResponse {
        var contract = RequestContract()
        contract.length(request.app, field: "app", max: RequestContract.maxAppBytes)
        Self.required(request.productId, field: "product_id", in: &contract)
        Self.required(request.offerId, field: "offer_id", in: &contract)
        contract.length(
            request.applicationUsername, field: "application_username", max: RequestContract.maxIdentifierBytes)
        contract.uuid(request.nonce, field: "nonce", required: false)
        contract.number(request.timestamp, field: "timestamp", in: 0...253_402_300_799_999)
        try contract.check()
        let app = try client.apps.app(named: request.app)
        let nonce = (request.nonce.isEmpty ? UUID().uuidString : request.nonce).lowercased()
        let timestamp = request.timestamp == 0 ? client.nowMilliseconds : request.timestamp
        let signature = try client.promotionalOfferSignature(
            app: app, productID: request.productId, offerID: request.offerId,
            applicationUsername: request.applicationUsername, nonce: nonce, timestamp: timestamp)
        return CreatePromotionalOfferSignatureResponse(
            keyId: app.keyId, nonce: nonce, timestamp: timestamp, signature: signature, offerId: request.offerId)
    }

    /// The StoreKit 2 promotional offer JWS (audience "promotional-offer").
    func promotionalOfferV2(
        _ request: CreatePromotionalOfferV2SignatureRequest
    ) throws(GatewayError) -> SignedJWSResponse {
        var contract = RequestContract()
        contract.length(request.app, field: "app", max: RequestContract.maxAppBytes)
        Self.required(request.productId, field: "product_id", in: &contract)
        Self.required(request.offerIdentifier, field: "offer_identifier", in: &contract)
        contract.transactionID(request.transactionId, field: "transaction_id", required: false)
        try contract.check()
        var claims = [
            ("productId", JSONString.quoted(request.productId)),
            ("offerIdentifier", JSONString.quoted(request.offerIdentifier)),
        ]
        if !request.transactionId.isEmpty { claims.append(("transactionId", JSONString.quoted(request.transactionId))) }
        return try sign(app: request.app, audience: "promotional-offer", claims: claims)
    }

    /// The StoreKit 2 introductory offer eligibility JWS (audience "introductory-offer-eligibility").
    func introductoryOfferEligibility(
        _ request: CreateIntroductoryOfferEligibilitySignatureRequest
    ) throws(GatewayError) -> SignedJWSResponse {
        var contract = RequestContract()
        contract.length(request.app, field: "app", max: RequestContract.maxAppBytes)
        Self.required(request.productId, field: "product_id", in: &contract)
        contract.transactionID(request.transactionId, field: "transaction_id", required: true)
        try contract.check()
        return try sign(
            app: request.app, audience: "introductory-offer-eligibility",
            claims: [
                ("productId", JSONString.quoted(request.productId)),
                ("allowIntroductoryOffer", request.allowIntroductoryOffer ? "true" : "false"),
                ("transactionId", JSONString.quoted(request.transactionId)),
            ])
    }

    private func sign(app name: String, audience: String, claims: [(String, String)]) throws(GatewayError)
        -> SignedJWSResponse
    {
        let app = try client.apps.app(named: name)
        let nonce = UUID().uuidString.lowercased()
        let issuedAt = client.nowMilliseconds / 1000
        let jws = try client.storeKitJWS(app: app, audience: audience, claims: claims, nonce: nonce, issuedAt: issuedAt)
        return SignedJWSResponse(jws: jws, nonce: nonce, issuedAt: issuedAt)
    }

    private static func required(_ value: String, field: String, in contract: inout RequestContract) {
        if value.isEmpty { contract.refuse(field, "is required") }
        contract.length(value, field: field, max: RequestContract.maxIdentifierBytes)
    }
}
