import AppStoreClient
import AppStoreDomain
import Foundation
import GatewayFoundation
import ProtoCodec

/// Turns a stream's answer (or the app's configured default) into Apple's RealtimeResponseBody: the answer's
/// fields checked against Apple's rules first, a promotional offer or an Advanced Commerce request signed with
/// the app's key (the key never leaves the gateway; one ECDSA signature, no Apple call). Whatever is signed names
/// the customer of the request answered (its `originalTransactionId`), never one the answer chooses.
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
        case .advancedCommerceInfo(let info)?:
            let field = "advanced_commerce_info"
            contract.uuid(info.messageIdentifier, field: "\(field).message_identifier", required: true)
            guard let modify = info.modifySubscription else {
                contract.refuse("\(field).modify_subscription", "is required")
                break
            }
            // Checked as signed: with a transaction id (the request's, known when answered) and a reference id.
            _ = inAppRequest(
                modify, transactionId: "1", referenceId: "00000000-0000-4000-8000-000000000000", &contract)
        }
        guard !contract.violations.isEmpty else { return nil }
        return contract.violations.map { "\($0.field) \($0.problem)" }.joined(separator: "; ")
    }

    /// Why `answer` may not answer `request` (it names another customer), or nil. Apple requires the promotional
    /// offer signature of a realtime answer to name the request's `originalTransactionId`; so does the gateway for
    /// an Advanced Commerce request.
    package static func mismatch(_ answer: RealtimeAnswer, request: RealtimeRequest) -> String? {
        let (field, transaction): (String, String)
        switch answer.choice {
        case .promotionalOffer(let offer)?: (field, transaction) = ("promotional_offer", offer.transactionId)
        case .advancedCommerceInfo(let info)?:
            (field, transaction) = (
                "advanced_commerce_info.modify_subscription", info.modifySubscription?.transactionId ?? ""
            )
        default: return nil
        }
        guard !transaction.isEmpty, transaction != request.originalTransactionId else { return nil }
        return "\(field).transaction_id must be empty or the request's original_transaction_id"
    }

    /// The answer a configured default stands for.
    package static func answer(_ configured: RealtimeDefault?) -> RealtimeAnswer {
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
    package func body(_ answer: RealtimeAnswer, app: App, request: RealtimeRequest)
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
            // Always the request's customer: an answer naming another one was refused before (`mismatch`).
            let transaction = request.originalTransactionId
            if !transaction.isEmpty { claims.append(("transactionId", JSONString.quoted(transaction))) }
            let jws = try client.storeKitJWS(
                app: app, audience: "promotional-offer", claims: claims, nonce: UUID().uuidString.lowercased(),
                issuedAt: client.nowMilliseconds / 1000)
            return .promotionalOfferV2(messageIdentifier: messageIdentifier, signature: jws)
        case .advancedCommerceInfo(let info)?:
            var contract = RequestContract()
            let json = Self.inAppRequest(
                info.modifySubscription ?? AdvancedCommerceSubscriptionModify(),
                transactionId: request.originalTransactionId, referenceId: UUID().uuidString, &contract)
            try contract.check()
            let jws = try client.storeKitJWS(
                app: app, audience: InAppSignatureHandler.audience,
                claims: [("request", JSONString.quoted(Data(json.bytes).base64EncodedString()))],
                nonce: UUID().uuidString.lowercased(), issuedAt: client.nowMilliseconds / 1000)
            // Apple's advancedCommerceRequestData: the JWS in `signatureInfo.token`, the whole Base64-encoded.
            let data = JSONText.object([("signatureInfo", JSONText.object([("token", JSONString.quoted(jws))]))])
            return .advancedCommerceInfo(
                messageIdentifier: info.messageIdentifier.lowercased(),
                advancedCommerceData: Data(data.utf8).base64EncodedString())
        }
    }

    /// Apple's SubscriptionModifyInAppRequest for `modify` as a realtime answer carries it: exactly one change item,
    /// nothing added or removed (Apple's rule for `advancedCommerceData`), the subscription `transactionId`, an
    /// empty reference id replaced by `referenceId`.
    private static func inAppRequest(
        _ modify: AdvancedCommerceSubscriptionModify, transactionId: String, referenceId: String,
        _ contract: inout RequestContract
    ) -> AdvancedCommerceJSON {
        let field = "advanced_commerce_info.modify_subscription"
        if modify.changeItems.count != 1 { contract.refuse("\(field).change_items", "must hold exactly one item") }
        if !modify.addItems.isEmpty { contract.refuse("\(field).add_items", "must be empty in a realtime answer") }
        if !modify.removeSkus.isEmpty {
            contract.refuse("\(field).remove_skus", "must be empty in a realtime answer")
        }
        var signed = modify
        signed.transactionId = transactionId
        var info = modify.requestInfo ?? AdvancedCommerceRequestInfo()
        if info.requestReferenceId.isEmpty { info.requestReferenceId = referenceId }
        signed.requestInfo = info
        return signed.json(field, &contract)
    }

    private static func required(_ value: String, field: String, in contract: inout RequestContract) {
        if value.isEmpty { contract.refuse(field, "is required") }
        contract.length(value, field: field, max: RequestContract.maxIdentifierBytes)
    }
}
