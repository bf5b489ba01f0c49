import AppStoreClient
import AppStoreDomain
import Foundation
import GatewayFoundation
import ProtoCodec

/// Get All Subscription Statuses and the renewal-date extensions.
extension AppleOperation
where Request == GetAllSubscriptionStatusesRequest, Response == GetAllSubscriptionStatusesResponse {
    static var getAllSubscriptionStatuses: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            if contract.count(request.status.count, field: "status") {
                for (index, status) in request.status.enumerated() where !(1...5).contains(status.rawValue) {
                    contract.refuse("status[\(index)]", "must be a known SubscriptionStatus other than UNSPECIFIED")
                }
            }
            try contract.check()
            // Apple's repeated `status` parameter, each value once, in ascending order.
            let query = Set(request.status.map(\.rawValue)).sorted().map { "status=\($0)" }.joined(separator: "&")
            return AppleRequest(
                .getAllSubscriptionStatuses, pathValues: [request.transactionId], query: query,
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(StatusWire.self, what: "subscription statuses")
            var response = GetAllSubscriptionStatusesResponse(
                environment: answer.environment, bundleId: wire.bundleId ?? "", appAppleId: wire.appAppleId ?? 0)
            for (groupIndex, group) in (wire.data ?? []).enumerated() {
                var typed = SubscriptionGroupStatus(
                    subscriptionGroupIdentifier: group.subscriptionGroupIdentifier ?? "")
                for (index, item) in (group.lastTransactions ?? []).enumerated() {
                    let place = "of lastTransactions[\(index)] of data[\(groupIndex)]"
                    var last = LastTransaction(
                        status: SubscriptionStatus(rawValue: Int32(clamping: item.status ?? 0)),
                        statusRaw: Int32(clamping: item.status ?? 0),
                        originalTransactionId: item.originalTransactionId ?? "",
                        signedTransactionInfo: item.signedTransactionInfo ?? "",
                        signedRenewalInfo: item.signedRenewalInfo ?? "")
                    if case .unrecognized = last.status { last.status = .unspecified }
                    if let jws = item.signedTransactionInfo {
                        last.transaction = try answer.transaction(jws, what: "signedTransactionInfo \(place)")
                    }
                    if let jws = item.signedRenewalInfo {
                        last.renewalInfo = try answer.renewalInfo(jws, what: "signedRenewalInfo \(place)")
                    }
                    typed.lastTransactions.append(last)
                }
                response.data.append(typed)
            }
            return response
        }
    }
}

extension AppleOperation
where Request == ExtendSubscriptionRenewalDateRequest, Response == ExtendSubscriptionRenewalDateResponse {
    static var extendSubscriptionRenewalDate: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            contract.number(Int64(request.extendByDays), field: "extend_by_days", in: 1...90)
            contract.length(
                request.requestIdentifier, field: "request_identifier", max: RequestContract.maxRequestIdentifierBytes)
            try contract.check()
            let identifier = request.requestIdentifier.isEmpty ? newRequestIdentifier() : request.requestIdentifier
            let body = AppleJSONBody.encode([
                "extendByDays": .integer(Int64(request.extendByDays)),
                "extendReasonCode": .integer(try request.extendReasonCode.appleValue()),
                "requestIdentifier": .string(identifier),
            ])
            return AppleRequest(
                .extendSubscriptionRenewalDate, pathValues: [request.transactionId], body: body,
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(ExtendWire.self, what: "renewal date extension")
            return ExtendSubscriptionRenewalDateResponse(
                environment: answer.environment, originalTransactionId: wire.originalTransactionId ?? "",
                webOrderLineItemId: wire.webOrderLineItemId ?? "", success: wire.success ?? false,
                effectiveDate: answer.date(wire.effectiveDate),
                requestIdentifier: answer.requestIdentifier, rawJson: answer.response.bodyText)
        }
    }
}

extension AppleOperation
where
    Request == ExtendRenewalDatesForAllActiveSubscribersRequest,
    Response == ExtendRenewalDatesForAllActiveSubscribersResponse
{
    static var extendRenewalDatesForAllActiveSubscribers: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.number(Int64(request.extendByDays), field: "extend_by_days", in: 1...90)
            contract.length(
                request.requestIdentifier, field: "request_identifier", max: RequestContract.maxRequestIdentifierBytes)
            if request.productId.isEmpty { contract.refuse("product_id", "is required") }
            contract.length(request.productId, field: "product_id", max: RequestContract.maxIdentifierBytes)
            contract.strings(request.storefrontCountryCodes, field: "storefront_country_codes", maxBytes: 3)
            try contract.check()
            let identifier = request.requestIdentifier.isEmpty ? newRequestIdentifier() : request.requestIdentifier
            var members: [String: AppleJSONBody.Value] = [
                "extendByDays": .integer(Int64(request.extendByDays)),
                "extendReasonCode": .integer(try request.extendReasonCode.appleValue()),
                "requestIdentifier": .string(identifier), "productId": .string(request.productId),
            ]
            if !request.storefrontCountryCodes.isEmpty {
                members["storefrontCountryCodes"] = .strings(request.storefrontCountryCodes)
            }
            return AppleRequest(
                .extendRenewalDatesForAllActiveSubscribers, body: AppleJSONBody.encode(members),
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(MassExtendWire.self, what: "mass renewal date extension")
            return ExtendRenewalDatesForAllActiveSubscribersResponse(
                environment: answer.environment, requestIdentifier: wire.requestIdentifier ?? answer.requestIdentifier)
        }
    }
}

extension AppleOperation
where
    Request == GetStatusOfSubscriptionRenewalDateExtensionsRequest,
    Response == GetStatusOfSubscriptionRenewalDateExtensionsResponse
{
    static var getStatusOfSubscriptionRenewalDateExtensions: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.segment(request.productId, field: "product_id", max: RequestContract.maxIdentifierBytes)
            contract.segment(
                request.requestIdentifier, field: "request_identifier", max: RequestContract.maxRequestIdentifierBytes)
            try contract.check()
            return AppleRequest(
                .getStatusOfSubscriptionRenewalDateExtensions,
                pathValues: [request.productId, request.requestIdentifier],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(MassExtendStatusWire.self, what: "mass extension status")
            return GetStatusOfSubscriptionRenewalDateExtensionsResponse(
                environment: answer.environment, requestIdentifier: wire.requestIdentifier ?? "",
                complete: wire.complete ?? false,
                completeDate: answer.date(wire.completeDate),
                succeededCount: wire.succeededCount ?? 0, failedCount: wire.failedCount ?? 0,
                rawJson: answer.response.bodyText)
        }
    }
}

/// A fresh `requestIdentifier` for an extension the caller did not name.
private func newRequestIdentifier() -> String { UUID().uuidString.lowercased() }

extension AppleAnswer {
    /// The `requestIdentifier` the gateway sent in the body (the caller's or the generated one).
    var requestIdentifier: String {
        guard let body = request.body, let object = JSONObject(parsing: body), let sent = try? MassExtendWire(object)
        else { return "" }
        return sent.requestIdentifier ?? ""
    }
}

extension ExtendReasonCode {
    /// Apple's number: the proto number - 1; UNSPECIFIED is Apple's 0 (undeclared).
    func appleValue() throws(GatewayError) -> Int64 {
        switch self {
        case .unspecified, .undeclared: 0
        case .customerSatisfaction: 1
        case .other: 2
        case .serviceIssueOrOutage: 3
        case .unrecognized(let value):
            throw .invalidArgument(field: "extend_reason_code", problem: "unknown ExtendReasonCode \(value)")
        }
    }
}

/// StatusResponse on the wire.
private struct StatusWire: AppleJSONShape {
    struct Group: AppleJSONShape {
        var subscriptionGroupIdentifier: String?
        var lastTransactions: [Item]?

        init(_ object: JSONObject) throws(JSONFieldMismatch) {
            subscriptionGroupIdentifier = try object.string("subscriptionGroupIdentifier")
            lastTransactions = try object.objects("lastTransactions")?.map { item throws(JSONFieldMismatch) in
                try Item(item)
            }
        }
    }
    struct Item: AppleJSONShape {
        var status: Int64?
        var originalTransactionId: String?
        var signedTransactionInfo: String?
        var signedRenewalInfo: String?

        init(_ object: JSONObject) throws(JSONFieldMismatch) {
            status = try object.int64("status")
            originalTransactionId = try object.string("originalTransactionId")
            signedTransactionInfo = try object.string("signedTransactionInfo")
            signedRenewalInfo = try object.string("signedRenewalInfo")
        }
    }
    var environment: String?
    var bundleId: String?
    var appAppleId: Int64?
    var data: [Group]?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        environment = try object.string("environment")
        bundleId = try object.string("bundleId")
        appAppleId = try object.int64("appAppleId")
        data = try object.objects("data")?.map { group throws(JSONFieldMismatch) in try Group(group) }
    }
}

/// ExtendRenewalDateResponse on the wire.
private struct ExtendWire: AppleJSONShape {
    var originalTransactionId: String?
    var webOrderLineItemId: String?
    var success: Bool?
    var effectiveDate: Int64?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        originalTransactionId = try object.string("originalTransactionId")
        webOrderLineItemId = try object.string("webOrderLineItemId")
        success = try object.bool("success")
        effectiveDate = try object.int64("effectiveDate")
    }
}

/// MassExtendRenewalDateResponse on the wire (and the request identifier of a sent body).
private struct MassExtendWire: AppleJSONShape {
    var requestIdentifier: String?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        requestIdentifier = try object.string("requestIdentifier")
    }
}

/// MassExtendRenewalDateStatusResponse on the wire.
private struct MassExtendStatusWire: AppleJSONShape {
    var requestIdentifier: String?
    var complete: Bool?
    var completeDate: Int64?
    var succeededCount: Int64?
    var failedCount: Int64?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        requestIdentifier = try object.string("requestIdentifier")
        complete = try object.bool("complete")
        completeDate = try object.int64("completeDate")
        succeededCount = try object.int64("succeededCount")
        failedCount = try object.int64("failedCount")
    }
}
