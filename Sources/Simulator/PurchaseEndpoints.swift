import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation

/// Look Up Order ID, Get Refund History (V2), Get App Transaction Info, Send Consumption Information (V2), Set App
/// Account Token and Finish Transaction (Apple's App Store Server API documentation), over the generated datasets.
struct PurchaseEndpoints: Sendable {
    /// Refunded transactions per Get Refund History page (Apple's page size).
    static let refundPageSize = 20
    let revisions: PaginationTokenCodec

    /// `OrderLookupResponse`: status 0 with the order's transaction, or status 1 (still HTTP 200) for an order
    /// id nobody in this dataset has.
    func lookUpOrder(orderId: String, dataset: SimulatedDataset, signer: SignedPayloads, now: WallTime)
        throws(AppleRejection) -> OrderedJSON
    {
        let found = dataset.customers.lazy.flatMap(\.transactions).first { SimulatedOrder.id(of: $0) == orderId }
        guard let found else { return .object([("status", .integer(1))]) }
        return .object([
            ("status", .integer(0)),
            (
                "signedTransactions",
                .array([.string(try signer.transaction(found, signedDate: now.millisecondsSince1970))])
            ),
        ])
    }

    /// `RefundHistoryResponse`: the customer's revoked transactions, oldest revocation first, 20 per page, paged by
    /// an opaque `revision`.
    func refundHistory(
        transactionId: String, query: [(name: String, value: String)], dataset: SimulatedDataset,
        signer: SignedPayloads, now: WallTime
    ) throws(AppleRejection) -> OrderedJSON {
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        guard let customer = dataset.customer(owning: transactionId) else { throw .transactionIdNotFound() }
        let refunded = customer.transactions.filter(\.isRevoked).sorted {
            ($0.revocationDate ?? 0, $0.transactionId) < ($1.revocationDate ?? 0, $1.transactionId)
        }
        var offset = 0
        if let revision = query.first(where: { $0.name == "revision" })?.value {
            guard let cursor = try? revisions.decode(revision), cursor.fingerprint == String(customer.index),
                cursor.offset <= refunded.count
            else { throw AppleRejection(4_000_005, "Invalid request revision.") }
            offset = cursor.offset
        }
        let end = min(offset + Self.refundPageSize, refunded.count)
        let signedDate = now.millisecondsSince1970
        var signed: [OrderedJSON] = []
        for transaction in refunded[offset..<end] {
            signed.append(.string(try signer.transaction(transaction, signedDate: signedDate)))
        }
        let revision = revisions.encode(
            PaginationCursor(issuedAt: signedDate, offset: end, fingerprint: String(customer.index)))
        return .object([
            ("signedTransactions", .array(signed)), ("revision", .string(revision)),
            ("hasMore", .bool(end < refunded.count)),
        ])
    }

    /// `AppTransactionInfoResponse` for any transaction id or app transaction id of the customer.
    func appTransaction(transactionId: String, dataset: SimulatedDataset, signer: SignedPayloads, now: WallTime)
        throws(AppleRejection) -> OrderedJSON
    {
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        guard let customer = dataset.customer(owning: transactionId), let first = customer.transactions.first else {
            throw AppleRejection(4_040_019, "App transaction does not exist.")
        }
        var json = JSONObjectBuilder()
        json.add("receiptType", dataset.environment.appleName)
        json.add("appAppleId", signer.app.appAppleId)
        json.add("bundleId", dataset.bundleId)
        json.add("applicationVersion", "2.1")
        json.add("versionExternalIdentifier", dataset.environment == .production ? Int64(812_345_678) : 0)
        json.add("receiptCreationDate", now.millisecondsSince1970)
        json.add("originalPurchaseDate", first.originalPurchaseDate - 86_400_000)
        json.add("originalApplicationVersion", "1.0")
        json.add("deviceVerification", Data(SHA256Digest.of(customer.appTransactionId)).base64EncodedString())
        json.add("deviceVerificationNonce", SimulatedOrder.uuid(from: "nonce/" + customer.appTransactionId))
        json.add("appTransactionId", customer.appTransactionId)
        json.add("originalPlatform", "iOS")
        json.add("signedDate", now.millisecondsSince1970)
        return .object([("signedAppTransactionInfo", .string(try signer.sign(json.object)))])
    }

    /// Checks a V2 `ConsumptionRequest` body in Apple's order; the transaction must exist. 202, empty body.
    func consumption(transactionId: String, body: [UInt8], dataset: SimulatedDataset) throws(AppleRejection) {
        struct Body: Decodable {
            var customerConsented: Bool?
            var sampleContentProvided: Bool?
            var deliveryStatus: String?
            var consumptionPercentage: Int64?
            var refundPreference: String?
        }
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        let request = try JSONBody.decode(Body.self, body)
        guard request.customerConsented == true else {
            throw AppleRejection(4_000_035, "Invalid request. The customer consented field is invalid.")
        }
        guard request.sampleContentProvided != nil else {
            throw AppleRejection(4_000_041, "Invalid request. The sample content provided field is invalid.")
        }
        let deliveries = [
            "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
            "UNDELIVERED_OTHER",
        ]
        guard let delivery = request.deliveryStatus, deliveries.contains(delivery) else {
            throw AppleRejection(4_000_036, "Invalid request. The delivery status field is invalid.")
        }
        if let percentage = request.consumptionPercentage, !(0...100_000).contains(percentage) {
            throw AppleRejection(4_000_000, "Invalid request. The consumption percentage is invalid.")
        }
        let preferences = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]
        if let preference = request.refundPreference, !preferences.contains(preference) {
            throw AppleRejection(4_000_000, "Invalid request. The refund preference is invalid.")
        }
        guard dataset.transaction(transactionId) != nil else { throw .transactionIdNotFound() }
    }

    /// Checks an `UpdateAppAccountTokenRequest` for an original transaction id; returns the token.
    func appAccountToken(transactionId: String, body: [UInt8], dataset: SimulatedDataset) throws(AppleRejection)
        -> String
    {
        struct Body: Decodable {
            var appAccountToken: String?
        }
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        let request = try JSONBody.decode(Body.self, body)
        guard let token = request.appAccountToken, UUID(uuidString: token) != nil else {
            throw AppleRejection(4_000_183, "Invalid request. The app account token must be a UUID.")
        }
        guard let transaction = dataset.transaction(transactionId) else { throw .transactionIdNotFound() }
        guard transaction.originalTransactionId == transactionId else {
            throw AppleRejection(4_000_187, "The transaction id is not an original transaction id.")
        }
        return token.lowercased()
    }
}

extension SimulatedDataset {
    /// Sets the app account token of every transaction of the purchase `originalTransactionId`.
    mutating func setAppAccountToken(_ token: String, originalTransactionId: String) {
        for customer in customers.indices {
            for index in customers[customer].transactions.indices
            where customers[customer].transactions[index].originalTransactionId == originalTransactionId {
                customers[customer].transactions[index].appAccountToken = token
            }
            for index in customers[customer].renewals.indices
            where customers[customer].renewals[index].originalTransactionId == originalTransactionId {
                customers[customer].renewals[index].appAccountToken = token
            }
        }
    }

    /// Marks a transaction finished; false when unknown.
    mutating func finish(transactionId: String) -> Bool {
        for customer in customers.indices {
            if let index = customers[customer].transactions.firstIndex(where: { $0.transactionId == transactionId }) {
                customers[customer].transactions[index].isFinished = true
                return true
            }
        }
        return false
    }
}

/// The simulator's order ids: one per transaction, derived from its id, so a test can compute them.
package enum SimulatedOrder {
    private static let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")

    /// "MT" and 10 characters from the transaction id's SHA-256.
    package static func id(of transaction: SimulatedTransaction) -> String {
        id(transactionId: transaction.transactionId)
    }

    /// The order id of `transactionId`.
    package static func id(transactionId: String) -> String {
        "MT" + String(SHA256Digest.of("order/" + transactionId).prefix(10).map { alphabet[Int($0) % alphabet.count] })
    }

    /// A UUID string derived from `text`.
    static func uuid(from text: String) -> String {
        let bytes = SHA256Digest.of(text)
        let hex = bytes.prefix(16).map { String(format: "%02x", $0) }.joined()
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }
}

/// Request bodies: Apple's JSON, or Apple's 4000000 for anything else (wrong types included).
enum JSONBody {
    static func decode<Body: Decodable>(_ type: Body.Type, _ body: [UInt8]) throws(AppleRejection) -> Body {
        guard body.count <= 65_536, let decoded = try? JSONDecoder().decode(Body.self, from: Data(body)) else {
            throw AppleRejection(4_000_000, "Invalid request.")
        }
        return decoded
    }
}

/// SHA-256 of text, for derived ids.
enum SHA256Digest {
    static func of(_ text: String) -> [UInt8] { SHA256.hash(Array(text.utf8)) }
}
