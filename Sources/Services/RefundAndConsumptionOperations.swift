import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import ProtoCodec

/// Get Refund History (V2, paged by `revision`) and Send Consumption Information (V2 body).
extension AppleOperation where Request == GetRefundHistoryRequest, Response == GetRefundHistoryResponse {
    static var getRefundHistory: Self {
        var operation = Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            contract.length(request.revision, field: "revision", max: RequestContract.maxRevisionBytes)
            try contract.check()
            return AppleRequest(
                .getRefundHistory, pathValues: [request.transactionId], query: revisionQuery(request.revision),
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(RefundHistoryWire.self, what: "refund history")
            let signed = wire.signedTransactions ?? []
            var transactions: [Transaction] = []
            for (index, jws) in signed.enumerated() {
                transactions.append(try answer.transaction(jws, what: "signed transaction \(index) of the page"))
            }
            return GetRefundHistoryResponse(
                environment: answer.environment, hasMore: wire.hasMore ?? false, revision: wire.revision ?? "",
                signedTransactions: signed, transactions: transactions, pagesFetched: 1)
        }
        operation.paging = Paging(
            next: { request, page, sent in
                guard request.allPages, page.hasMore, !page.revision.isEmpty,
                    revisionQuery(page.revision) != sent.query
                else { return nil }
                var next = sent
                next.query = revisionQuery(page.revision)
                return next
            },
            merge: { response, page in
                response.signedTransactions += page.signedTransactions
                response.transactions += page.transactions
                response.hasMore = page.hasMore
                response.revision = page.revision
                response.pagesFetched += page.pagesFetched
            })
        return operation
    }

    /// Apple's `revision` query parameter; empty for the first page.
    private static func revisionQuery(_ revision: String) -> String {
        revision.isEmpty ? "" : "revision=" + PercentEncoding.encode(revision)
    }
}

extension AppleOperation
where Request == SendConsumptionInformationRequest, Response == SendConsumptionInformationResponse {
    static var sendConsumptionInformation: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            if case .consumptionPercentage(let value) = request.consumption {
                contract.number(Int64(value), field: "consumption_percentage", in: 0...100_000)
            }
            let delivery: String? =
                switch request.deliveryStatus {
                case .delivered: "DELIVERED"
                case .undeliveredQualityIssue: "UNDELIVERED_QUALITY_ISSUE"
                case .undeliveredWrongItem: "UNDELIVERED_WRONG_ITEM"
                case .undeliveredServerOutage: "UNDELIVERED_SERVER_OUTAGE"
                case .undeliveredOther: "UNDELIVERED_OTHER"
                case .unspecified, .unrecognized: nil
                }
            if delivery == nil { contract.refuse("delivery_status", "must be a known DeliveryStatus") }
            let preference: String?
            switch request.refundPreference {
            case .unspecified: preference = nil
            case .decline: preference = "DECLINE"
            case .grantFull: preference = "GRANT_FULL"
            case .grantProrated: preference = "GRANT_PRORATED"
            case .unrecognized:
                preference = nil
                contract.refuse("refund_preference", "must be a known RefundPreference")
            }
            try contract.check()
            var members: [String: AppleJSONBody.Value] = [
                "customerConsented": .bool(request.customerConsented),
                "sampleContentProvided": .bool(request.sampleContentProvided),
                "deliveryStatus": .string(delivery ?? ""),
            ]
            if case .consumptionPercentage(let value) = request.consumption {
                members["consumptionPercentage"] = .integer(Int64(value))
            }
            if let preference { members["refundPreference"] = .string(preference) }
            return AppleRequest(
                .sendConsumptionInformation, pathValues: [request.transactionId], body: AppleJSONBody.encode(members),
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            SendConsumptionInformationResponse(environment: answer.environment)
        }
    }
}

/// RefundHistoryResponse on the wire.
private struct RefundHistoryWire: AppleJSONShape {
    var signedTransactions: [String]?
    var revision: String?
    var hasMore: Bool?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        signedTransactions = try object.strings("signedTransactions")
        revision = try object.string("revision")
        hasMore = try object.bool("hasMore")
    }
}
