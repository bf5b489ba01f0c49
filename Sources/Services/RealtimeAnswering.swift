import AppStoreClient
import AppStoreDomain
import Configuration
import Foundation
import GatewayFoundation
import ProtoCodec

/// Turns a stream's answer (or the app's configured default) into Apple's RealtimeResponseBody: the answer's
/// fields checked against Apple's rules first, a promotional offer signed with the app's key (the key never
/// leaves the gateway; one ECDSA signature, no Apple call).
package struct RealtimeAnswering: Sendable {
    let client: AppStoreAPIClient

    /// The contract's violations of `answer` as one line, or nil when it is well-formed.
    package static func problem(_ answer: RealtimeAnswer) -> String? {
        var contract = RequestContract()
        switch answer.choice {
        case nil: break
        case .message(let message)?:
            contract.uuid(message.messageIdentifier, field: "message.message_identifier", required: true)
        case .alternateProduct(let product)?:
            contract.uuid(product.messageIdentifier, field: "alternate_product.message_identifier", required: true)
            required(product.productId, field: "alternate_product.product_id", in: &contract)
            contract.length(product.billingPlanType, field: "alternate_product.billing_plan_type", max: 64)
        case .promotionalOffer(let offer)?:
            contract.uuid(offer.messageIdentifier, field: "promotional_offer.message_identifier", required: true)
            required(offer.productId, field: "promotional_offer.product_id", in: &contract)
            required(offer.offerIdentifier, field: "promotional_offer.offer_identifier", in: &contract)
            contract.transactionID(offer.transactionId, field: "promotional_offer.transaction_id", required: false)
            contract.uuid(offer.appAccountToken, field: "promotional_offer.app_account_token", required: false)
            if case .unrecognized(let number) = offer.signature {
                contract.refuse("promotional_offer.signature", "is not a known signature version (\(number))")
            }
        }
        guard !contract.violations.isEmpty else { return nil }
        return contract.violations.map { "\($0.field) \($0.problem)" }.joined(separator: "; ")
    }

    /// The answer a configured default stands for.
    package static func answer(_ configured: GatewayConfiguration.RealtimeDefault?) -> RealtimeAnswer {
        var answer = RealtimeAnswer()
        switch configured {
        case nil: break
        case .message(let id)?: answer.choice = .message(RealtimeMessage(messageIdentifier: id))
        case .alternateProduct(let id, let productId, let plan)?:
            answer.choice = .alternateProduct(
                RealtimeAlternateProduct(messageIdentifier: id, productId: productId, billingPlanType: plan))
        case .promotionalOffer(let id, let productId, let offerIdentifier, let v1)?:
            answer.choice = .promotionalOffer(
                RealtimePromotionalOffer(
                    messageIdentifier: id, productId: productId, offerIdentifier: offerIdentifier,
                    signature: v1 ? .v1 : .v2, transactionId: "", appAccountToken: ""))
        }
        return answer
    }

    /// The body for a well-formed `answer` to `request` of `app`, signing a promotional offer.
    package func body(_ answer: RealtimeAnswer, app: GatewayConfiguration.App, request: RealtimeRequest)
        throws(GatewayError)
        -> RealtimeResponseBody
    {
        switch answer.choice {
        case nil: return .none
        case .message(let message)?: return .message(messageIdentifier: message.messageIdentifier.lowercased())
        case .alternateProduct(let product)?:
            return .alternateProduct(
                messageIdentifier: product.messageIdentifier.lowercased(), productId: product.productId,
                billingPlanType: product.billingPlanType)
        case .promotionalOffer(let offer)?:
            let messageIdentifier = offer.messageIdentifier.lowercased()
            if offer.signature == .v1 {
                let nonce = UUID().uuidString.lowercased()
                let timestamp = client.nowMilliseconds
                let token = offer.appAccountToken.lowercased()
                let signature = try client.promotionalOfferSignature(
                    app: app, productID: offer.productId, offerID: offer.offerIdentifier, applicationUsername: token,
                    nonce: nonce, timestamp: timestamp)
                return .promotionalOfferV1(
                    messageIdentifier: messageIdentifier,
                    signature: .init(
                        encodedSignature: signature, productId: offer.productId, nonce: nonce, timestamp: timestamp,
                        keyId: app.keyId, offerIdentifier: offer.offerIdentifier, appAccountToken: token))
            }
            var claims = [
                ("productId", JSONString.quoted(offer.productId)),
                ("offerIdentifier", JSONString.quoted(offer.offerIdentifier)),
            ]
            let transaction = offer.transactionId.isEmpty ? request.originalTransactionId : offer.transactionId
            if !transaction.isEmpty { claims.append(("transactionId", JSONString.quoted(transaction))) }
            let jws = try client.storeKitJWS(
                app: app, audience: "promotional-offer", claims: claims, nonce: UUID().uuidString.lowercased(),
                issuedAt: client.nowMilliseconds / 1000)
            return .promotionalOfferV2(messageIdentifier: messageIdentifier, signature: jws)
        }
    }

    private static func required(_ value: String, field: String, in contract: inout RequestContract) {
        if value.isEmpty { contract.refuse(field, "is required") }
        contract.length(value, field: field, max: RequestContract.maxIdentifierBytes)
    }
}
