import GatewayFoundation

/// The JSON the gateway answers Apple's realtime request with (Apple's RealtimeResponseBody): at most one of
/// `message`, `alternateProduct`, `promotionalOffer` and `advancedCommerceInfo`, signatures already made. `none` is
/// `{}`: no realtime choice, so Apple shows the default message configured with it.
package enum RealtimeResponseBody: Sendable, Hashable {
    /// Apple's PromotionalOfferSignatureV1: the StoreKit 1 signature and what it signed.
    package struct SignatureV1: Sendable, Hashable {
        package var encodedSignature: String
        package var productId: String
        package var nonce: String
        package var timestamp: Int64
        package var keyId: String
        package var offerIdentifier: String
        /// Empty = left out.
        package var appAccountToken: String

        package init(
            encodedSignature: String, productId: String, nonce: String, timestamp: Int64, keyId: String,
            offerIdentifier: String, appAccountToken: String
        ) {
            self.encodedSignature = encodedSignature
            self.productId = productId
            self.nonce = nonce
            self.timestamp = timestamp
            self.keyId = keyId
            self.offerIdentifier = offerIdentifier
            self.appAccountToken = appAccountToken
        }
    }

    case none
    case message(messageIdentifier: String)
    case alternateProduct(messageIdentifier: String, productId: String, billingPlanType: String)
    case promotionalOfferV2(messageIdentifier: String, signature: String)
    case promotionalOfferV1(messageIdentifier: String, signature: SignatureV1)
    /// Apple's AdvancedCommerceInfo: `advancedCommerceData` is the Base64 of `{"signatureInfo":{"token":<JWS>}}`.
    case advancedCommerceInfo(messageIdentifier: String, advancedCommerceData: String)

    /// The body's bytes (UTF-8 JSON, members in Apple's documented order).
    package var json: [UInt8] { Array(text.utf8) }

    /// The body as text.
    package var text: String {
        switch self {
        case .none:
            return "{}"
        case .message(let id):
            return object([("message", object([("messageIdentifier", quoted(id))]))])
        case .alternateProduct(let id, let productId, let plan):
            var members = [("messageIdentifier", quoted(id)), ("productId", quoted(productId))]
            if !plan.isEmpty { members.append(("billingPlanType", quoted(plan))) }
            return object([("alternateProduct", object(members))])
        case .promotionalOfferV2(let id, let signature):
            return object([
                (
                    "promotionalOffer",
                    object([("messageIdentifier", quoted(id)), ("promotionalOfferSignatureV2", quoted(signature))])
                )
            ])
        case .promotionalOfferV1(let id, let v1):
            var signature = [
                ("encodedSignature", quoted(v1.encodedSignature)), ("productId", quoted(v1.productId)),
                ("nonce", quoted(v1.nonce)), ("timestamp", String(v1.timestamp)), ("keyId", quoted(v1.keyId)),
                ("offerIdentifier", quoted(v1.offerIdentifier)),
            ]
            if !v1.appAccountToken.isEmpty { signature.append(("appAccountToken", quoted(v1.appAccountToken))) }
            return object([
                (
                    "promotionalOffer",
                    object([("messageIdentifier", quoted(id)), ("promotionalOfferSignatureV1", object(signature))])
                )
            ])
        case .advancedCommerceInfo(let id, let data):
            return object([
                (
                    "advancedCommerceInfo",
                    object([("messageIdentifier", quoted(id)), ("advancedCommerceData", quoted(data))])
                )
            ])
        }
    }

    private func quoted(_ text: String) -> String { JSONString.quoted(text) }

    private func object(_ members: [(String, String)]) -> String { JSONText.object(members) }
}
