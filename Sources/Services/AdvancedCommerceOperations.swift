import AppStoreClient
import AppStoreDomain
import Foundation
import GatewayFoundation
import ProtoCodec

/// An Advanced Commerce API server request: a write on one transaction, made idempotent at Apple by its
/// `requestInfo.requestReferenceId`.
protocol AdvancedCommerceWrite: ProtoMessage {
    /// The configured app.
    var app: String { get }
    /// The environment asked for.
    var environment: Environment { get }
    /// The transaction the write is about (Apple's path parameter).
    var transactionId: String { get }
    /// The request's metadata.
    var requestInfo: AdvancedCommerceRequestInfo? { get }
    /// The body's members after `requestInfo`, each checked against the contract.
    func members(_ object: inout AdvancedCommerceJSONObject, _ contract: inout RequestContract)
}

extension AppleOperation where Request: AdvancedCommerceWrite, Response == AdvancedCommerceResponse {
    /// The write to `endpoint`: the body is `requestInfo` (its reference id generated once when the caller sent
    /// none, so the client's retries of this call resend the same one) and the request's members; Apple's answer
    /// is the transaction and, for a subscription, its renewal info, both verified.
    static func advancedCommerce(_ endpoint: AppleEndpoint) -> Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            var object = AdvancedCommerceJSONObject()
            let info = request.requestInfo ?? AdvancedCommerceRequestInfo()
            object.add(
                "requestInfo", info.json("request_info", generated: UUID().uuidString.lowercased(), &contract))
            request.members(&object, &contract)
            try contract.check()
            return AppleRequest(
                endpoint, pathValues: [request.transactionId], body: object.json.bytes,
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(AdvancedCommerceWire.self, what: "Advanced Commerce answer")
            var response = AdvancedCommerceResponse(
                environment: answer.environment, requestReferenceId: answer.requestReferenceId,
                signedTransactionInfo: wire.signedTransactionInfo ?? "",
                signedRenewalInfo: wire.signedRenewalInfo ?? "")
            if let jws = wire.signedTransactionInfo {
                response.transaction = try answer.transaction(jws, what: "signedTransactionInfo")
            }
            if let jws = wire.signedRenewalInfo {
                response.renewalInfo = try answer.renewalInfo(jws, what: "signedRenewalInfo")
            }
            return response
        }
    }
}

extension AppleAnswer {
    /// The `requestInfo.requestReferenceId` the gateway sent (the caller's or the generated one).
    var requestReferenceId: String {
        guard let body = request.body, let object = JSONObject(parsing: body),
            case .object(let info)? = object.members["requestInfo"],
            case .string(let reference)? = info["requestReferenceId"]
        else { return "" }
        return reference
    }
}

/// Every Advanced Commerce answer on the wire: `signedTransactionInfo` and, for subscriptions,
/// `signedRenewalInfo`.
private struct AdvancedCommerceWire: AppleJSONShape {
    var signedTransactionInfo: String?
    var signedRenewalInfo: String?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        signedTransactionInfo = try object.string("signedTransactionInfo")
        signedRenewalInfo = try object.string("signedRenewalInfo")
    }
}

private let storefrontWhat = "an ISO 3166-1 alpha-3 storefront"
private let currencyWhat = "an ISO 4217 currency"

extension CancelSubscriptionRequest: AdvancedCommerceWrite {
    func members(_ object: inout AdvancedCommerceJSONObject, _ contract: inout RequestContract) {
        contract.threeLetterCode(storefront, field: "storefront", what: storefrontWhat, required: false)
        object.add("storefront", ifPresent: storefront)
    }
}

extension RevokeSubscriptionRequest: AdvancedCommerceWrite {
    func members(_ object: inout AdvancedCommerceJSONObject, _ contract: inout RequestContract) {
        object.add("refundRiskingPreference", .bool(refundRiskingPreference))
        contract.oneOf(refundType, field: "refund_type", allowed: ["FULL", "PRORATED"])
        object.add("refundType", .string(refundType))
        contract.oneOf(refundReason, field: "refund_reason", allowed: RequestContract.refundReasons)
        object.add("refundReason", .string(refundReason))
        contract.threeLetterCode(storefront, field: "storefront", what: storefrontWhat, required: false)
        object.add("storefront", ifPresent: storefront)
    }
}

extension ChangeSubscriptionPriceRequest: AdvancedCommerceWrite {
    func members(_ object: inout AdvancedCommerceJSONObject, _ contract: inout RequestContract) {
        object.add(
            "items", .array(contract.itemArray(items, field: "items", required: true) { $0.json($1, &$2) }))
        contract.threeLetterCode(currency, field: "currency", what: currencyWhat, required: false)
        object.add("currency", ifPresent: currency)
        contract.threeLetterCode(storefront, field: "storefront", what: storefrontWhat, required: false)
        object.add("storefront", ifPresent: storefront)
    }
}

extension ChangeSubscriptionMetadataRequest: AdvancedCommerceWrite {
    func members(_ object: inout AdvancedCommerceJSONObject, _ contract: inout RequestContract) {
        object.add("descriptors", ifPresent: descriptors.map { $0.json("descriptors", &contract) })
        object.add(
            "items", ifPresent: contract.itemArray(items, field: "items", required: false) { $0.json($1, &$2) })
        if descriptors == nil && items.isEmpty {
            contract.refuse("descriptors", "or items is required (the metadata to change)")
        }
        contract.threeLetterCode(storefront, field: "storefront", what: storefrontWhat, required: false)
        object.add("storefront", ifPresent: storefront)
        contract.taxCode(taxCode, field: "tax_code", required: false)
        object.add("taxCode", ifPresent: taxCode)
    }
}

extension MigrateSubscriptionRequest: AdvancedCommerceWrite {
    func members(_ object: inout AdvancedCommerceJSONObject, _ contract: inout RequestContract) {
        object.add("descriptors", requiredDescriptors(descriptors, "descriptors", &contract))
        object.add(
            "items", .array(contract.itemArray(items, field: "items", required: true) { $0.json($1, &$2) }))
        if targetProductId.isEmpty { contract.refuse("target_product_id", "is required") }
        contract.length(targetProductId, field: "target_product_id", max: RequestContract.maxIdentifierBytes)
        object.add("targetProductId", .string(targetProductId))
        contract.taxCode(taxCode, field: "tax_code", required: true)
        object.add("taxCode", .string(taxCode))
        object.add(
            "renewalItems",
            ifPresent: contract.itemArray(renewalItems, field: "renewal_items", required: false) { $0.json($1, &$2) })
        contract.threeLetterCode(storefront, field: "storefront", what: storefrontWhat, required: false)
        object.add("storefront", ifPresent: storefront)
    }
}

extension RequestRefundRequest: AdvancedCommerceWrite {
    func members(_ object: inout AdvancedCommerceJSONObject, _ contract: inout RequestContract) {
        object.add(
            "items", .array(contract.itemArray(items, field: "items", required: true) { $0.json($1, &$2) }))
        object.add("refundRiskingPreference", .bool(refundRiskingPreference))
        contract.threeLetterCode(currency, field: "currency", what: currencyWhat, required: false)
        object.add("currency", ifPresent: currency)
        contract.threeLetterCode(storefront, field: "storefront", what: storefrontWhat, required: false)
        object.add("storefront", ifPresent: storefront)
    }
}
