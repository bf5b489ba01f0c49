import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import ProtoCodec

/// Get Transaction Info, Get App Transaction Info, Look Up Order ID, Set App Account Token and Finish Transaction.
extension AppleOperation where Request == GetTransactionInfoRequest, Response == GetTransactionInfoResponse {
    static var getTransactionInfo: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            try contract.check()
            return AppleRequest(
                .getTransactionInfo, pathValues: [request.transactionId],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(TransactionInfoWire.self, what: "transaction info")
            guard let jws = wire.signedTransactionInfo else {
                throw .appleDataRejected(
                    app: answer.app.name, environment: answer.response.environment,
                    problem: "the transaction info answer has no signedTransactionInfo")
            }
            return GetTransactionInfoResponse(
                environment: answer.environment, signedTransactionInfo: jws,
                transaction: try answer.transaction(jws, what: "signedTransactionInfo"))
        }
    }
}

extension AppleOperation where Request == GetAppTransactionInfoRequest, Response == GetAppTransactionInfoResponse {
    static var getAppTransactionInfo: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            try contract.check()
            return AppleRequest(
                .getAppTransactionInfo, pathValues: [request.transactionId],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(AppTransactionInfoWire.self, what: "app transaction info")
            guard let jws = wire.signedAppTransactionInfo else {
                throw .appleDataRejected(
                    app: answer.app.name, environment: answer.response.environment,
                    problem: "the app transaction info answer has no signedAppTransactionInfo")
            }
            return GetAppTransactionInfoResponse(
                environment: answer.environment, signedAppTransactionInfo: jws,
                appTransaction: try answer.appTransaction(jws, what: "signedAppTransactionInfo"))
        }
    }
}

extension AppleOperation where Request == LookUpOrderIdRequest, Response == LookUpOrderIdResponse {
    static var lookUpOrderId: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.orderID(request.orderId, field: "order_id")
            try contract.check()
            return AppleRequest(
                .lookUpOrderId, pathValues: [request.orderId], environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(OrderLookupWire.self, what: "order lookup")
            let signed = wire.signedTransactions ?? []
            var transactions: [Transaction] = []
            for (index, jws) in signed.enumerated() {
                transactions.append(try answer.transaction(jws, what: "signed transaction \(index) of the order"))
            }
            let raw = Int32(clamping: wire.status ?? -1)
            let status: OrderLookupStatus =
                switch wire.status {
                case 0: .valid
                case 1: .invalid
                default: .unspecified
                }
            return LookUpOrderIdResponse(
                environment: answer.environment, status: status, statusRaw: wire.status == nil ? 0 : raw,
                signedTransactions: signed, transactions: transactions)
        }
    }
}

extension AppleOperation where Request == SetAppAccountTokenRequest, Response == SetAppAccountTokenResponse {
    static var setAppAccountToken: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            contract.uuid(request.appAccountToken, field: "app_account_token", required: true)
            try contract.check()
            return AppleRequest(
                .setAppAccountToken, pathValues: [request.transactionId],
                body: AppleJSONBody.encode(["appAccountToken": .string(request.appAccountToken)]),
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            SetAppAccountTokenResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == FinishTransactionRequest, Response == FinishTransactionResponse {
    static var finishTransaction: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.transactionId, field: "transaction_id", required: true)
            try contract.check()
            return AppleRequest(
                .finishTransaction, pathValues: [request.transactionId],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            FinishTransactionResponse(environment: answer.environment)
        }
    }
}

/// TransactionInfoResponse on the wire.
private struct TransactionInfoWire: AppleJSONShape {
    var signedTransactionInfo: String?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        signedTransactionInfo = try object.string("signedTransactionInfo")
    }
}

/// AppTransactionInfoResponse on the wire.
private struct AppTransactionInfoWire: AppleJSONShape {
    var signedAppTransactionInfo: String?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        signedAppTransactionInfo = try object.string("signedAppTransactionInfo")
    }
}

/// OrderLookupResponse on the wire.
private struct OrderLookupWire: AppleJSONShape {
    var status: Int64?
    var signedTransactions: [String]?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        status = try object.int64("status")
        signedTransactions = try object.strings("signedTransactions")
    }
}
