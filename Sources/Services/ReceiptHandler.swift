import AppStoreDomain
import ProtoCodec
import SignedData

/// ExtractTransactionIdFromReceipt: a receipt's transaction id (`ReceiptTransactionID`); a receipt that is not
/// well formed is INVALID_ARGUMENT naming the field and the problem.
enum ReceiptHandler {
    static func answer(_ request: ExtractTransactionIdFromReceiptRequest) throws(GatewayError)
        -> ExtractTransactionIdFromReceiptResponse
    {
        let found: String?
        switch request.receipt {
        case .appReceipt(let receipt)?:
            do {
                found = try ReceiptTransactionID.fromAppReceipt(receipt)
            } catch {
                throw .invalidArgument(field: "app_receipt", problem: error.description)
            }
        case .transactionReceipt(let receipt)?:
            do {
                found = try ReceiptTransactionID.fromTransactionReceipt(receipt)
            } catch {
                throw .invalidArgument(field: "transaction_receipt", problem: error.description)
            }
        case nil:
            throw .invalidArgument(field: "receipt", problem: "set app_receipt or transaction_receipt")
        }
        return ExtractTransactionIdFromReceiptResponse(found: found != nil, transactionId: found ?? "")
    }
}
