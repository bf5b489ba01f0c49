import AppStoreDomain
import ProtoCodec
import SignedData

/// ExtractTransactionIdFromReceipt: a receipt's transaction id (`ReceiptTransactionID`); a receipt that is not
/// well formed is INVALID_ARGUMENT naming the field and the problem.
enum ReceiptHandler {
    /// Receipt characters parsed on the call's loop; a longer one (up to `maxReceiptCharacters`, a few
    /// milliseconds of base64 and ASN.1) is parsed off it.
    static let loopReceiptCharacters = 16 * 1024

    /// Whether parsing `request`'s receipt would hold an event loop too long.
    static func holdsTheLoop(_ request: ExtractTransactionIdFromReceiptRequest) -> Bool {
        switch request.receipt {
        case .appReceipt(let receipt)?, .transactionReceipt(let receipt)?: receipt.utf8.count > loopReceiptCharacters
        case nil: false
        }
    }

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
