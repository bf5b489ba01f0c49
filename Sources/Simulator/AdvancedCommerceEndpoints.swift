import AppStoreDomain
import Foundation
import GatewayFoundation

/// The Advanced Commerce API's server endpoints (Apple's Advanced Commerce API documentation): Cancel a
/// Subscription, Revoke a Subscription, Change Subscription Price, Change Subscription Metadata, Migrate a
/// Subscription and Request Transaction Refund. Each body's `requestInfo.requestReferenceId` makes the write
/// idempotent: the same id with the same request answers what the first call answered (its effect made once),
/// the same id with another request is 4000097 RepeatedRequestReferenceId.
final class AdvancedCommerceEndpoints: Sendable {
    /// The members every body may carry, and those the simulator checks as Apple does.
    private struct Body: Decodable {
        struct RequestInfo: Decodable {
            var requestReferenceId: String?
            var appAccountToken: String?
        }
        var requestInfo: RequestInfo?
        var items: [Item]?
        var refundRiskingPreference: Bool?
        var refundType: String?
        var refundReason: String?
        var descriptors: Descriptors?
        var targetProductId: String?
        var taxCode: String?
        var storefront: String?
        var currency: String?
    }

    private struct Item: Decodable {
        var SKU: String?
        var currentSKU: String?
        var price: Int64?
        var refundType: String?
        var refundReason: String?
    }

    private struct Descriptors: Decodable {
        var description: String?
        var displayName: String?
    }

    /// A write already answered, by request reference id.
    private struct Answered {
        var request: String
        var body: OrderedJSON
        var at: Int64
    }

    private let answered = Lock<[String: Answered]>([:])
    /// Reference ids kept (oldest dropped first).
    private let capacity = 4096

    /// Answers `endpoint` for `transactionId` with `body`: `{signedTransactionInfo[, signedRenewalInfo]}`.
    func respond(
        _ endpoint: AppleEndpoint, transactionId: String, body bytes: [UInt8], store: SimulatedStore,
        dataset: SimulatedDataset, signer: SignedPayloads, now: WallTime
    ) throws(AppleRejection) -> OrderedJSON {
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        let body = try JSONBody.decode(Body.self, bytes)
        guard let info = body.requestInfo else { throw AppleRejection(4_000_079, "The requestInfo is required.") }
        guard let reference = info.requestReferenceId else {
            throw AppleRejection(4_000_080, "The requestReferenceId is required.")
        }
        guard reference.utf8.count == 36, UUID(uuidString: reference) != nil else {
            throw AppleRejection(4_000_081, "The requestReferenceId is invalid.")
        }
        if let token = info.appAccountToken, !token.isEmpty, UUID(uuidString: token) == nil {
            throw AppleRejection(4_000_033, "Invalid app account token.")
        }
        try check(endpoint, body)
        // The request as Apple would compare a repeat: the endpoint, its transaction and the body's bytes.
        let key = "\(dataset.bundleId)|\(dataset.environment.rawValue)|\(reference.lowercased())"
        let request = "\(endpoint.configName)|\(transactionId)|" + String(decoding: bytes, as: UTF8.self)
        if let earlier = answered.withLock({ $0[key] }) {
            guard earlier.request == request else {
                throw AppleRejection(4_000_097, "The requestReferenceId was repeated.")
            }
            return earlier.body
        }
        guard let transaction = dataset.transaction(transactionId) else { throw .transactionIdNotFound() }
        let subscription = dataset.customer(owning: transactionId)?.renewals.first {
            $0.originalTransactionId == transaction.originalTransactionId
        }
        if endpoint != .requestTransactionRefund && subscription == nil {
            throw AppleRejection(4_030_008, "The subscription doesn't exist.")
        }
        let effect = effect(endpoint, body: body, now: now.millisecondsSince1970)
        let changed = store.update(dataset.bundleId, dataset.environment) { dataset in
            dataset.applyAdvancedCommerce(transactionId: transactionId, effect)
        }
        guard let (changedTransaction, latest, renewal) = changed ?? nil else { throw .transactionIdNotFound() }
        // A refund answers with the refunded transaction, a subscription change with the subscription's latest.
        let signed = endpoint == .requestTransactionRefund ? changedTransaction : latest
        var members: [(String, OrderedJSON)] = [
            ("signedTransactionInfo", .string(try signer.transaction(signed, signedDate: now.millisecondsSince1970)))
        ]
        if endpoint != .requestTransactionRefund, let renewal {
            members.append(
                ("signedRenewalInfo", .string(try signer.renewal(renewal, signedDate: now.millisecondsSince1970))))
        }
        let answer = OrderedJSON.object(members)
        answered.withLock { all in
            if all.count >= capacity, let oldest = all.min(by: { $0.value.at < $1.value.at })?.key {
                all[oldest] = nil
            }
            all[key] = Answered(request: request, body: answer, at: now.millisecondsSince1970)
        }
        return answer
    }

    /// Apple's checks of each body's required members.
    private func check(_ endpoint: AppleEndpoint, _ body: Body) throws(AppleRejection) {
        if let storefront = body.storefront,
            storefront.utf8.count != 3 || !storefront.utf8.allSatisfy({ (0x41...0x5A).contains($0) })
        {
            throw AppleRejection(4_000_028, "The storefront value is invalid.")
        }
        if let currency = body.currency,
            currency.utf8.count != 3 || !currency.utf8.allSatisfy({ (0x41...0x5A).contains($0) })
        {
            throw AppleRejection(4_000_053, "The currency value is invalid.")
        }
        switch endpoint {
        case .revokeSubscription:
            guard body.refundRiskingPreference != nil else {
                throw AppleRejection(4_000_159, "The refundRiskingPreference is required.")
            }
            guard let type = body.refundType else { throw AppleRejection(4_000_157, "The refundType is required.") }
            guard ["FULL", "PRORATED"].contains(type) else {
                throw AppleRejection(4_000_123, "The refundType is invalid.")
            }
            try refundReason(body.refundReason)
        case .changeSubscriptionPrice:
            let items = try required(body.items)
            for item in items {
                try sku(item.SKU)
                guard let price = item.price else { throw AppleRejection(4_000_109, "The price is required.") }
                guard price >= 0 else { throw AppleRejection(4_000_086, "The price must not be negative.") }
            }
        case .changeSubscriptionMetadata:
            for item in body.items ?? [] {
                guard let current = item.currentSKU, !current.isEmpty else {
                    throw AppleRejection(4_000_169, "The currentSKU is required.")
                }
            }
        case .migrateSubscription:
            guard let descriptors = body.descriptors else {
                throw AppleRejection(4_000_103, "The descriptors are required.")
            }
            try names(descriptors.description, descriptors.displayName)
            for item in try required(body.items) { try sku(item.SKU) }
            guard let target = body.targetProductId, !target.isEmpty else {
                throw AppleRejection(4_000_166, "The targetProductId is required.")
            }
            guard body.taxCode?.isEmpty == false else { throw AppleRejection(4_000_099, "The taxCode is required.") }
        case .requestTransactionRefund:
            guard body.refundRiskingPreference != nil else {
                throw AppleRejection(4_000_159, "The refundRiskingPreference is required.")
            }
            for item in try required(body.items) {
                try sku(item.SKU)
                guard let type = item.refundType else {
                    throw AppleRejection(4_000_157, "The refundType is required.")
                }
                guard ["FULL", "PRORATED", "CUSTOM"].contains(type) else {
                    throw AppleRejection(4_000_123, "The refundType is invalid.")
                }
                try refundReason(item.refundReason)
            }
        default:
            break
        }
    }

    private func required(_ items: [Item]?) throws(AppleRejection) -> [Item] {
        guard let items else { throw AppleRejection(4_000_101, "The items are required.") }
        guard !items.isEmpty else { throw AppleRejection(4_000_160, "Provide at least one item.") }
        return items
    }

    private func sku(_ value: String?) throws(AppleRejection) {
        guard let value, !value.isEmpty else { throw AppleRejection(4_000_105, "The SKU is required.") }
        guard value.unicodeScalars.count <= 128 else {
            throw AppleRejection(4_000_087, "The SKU exceeds its maximum length.")
        }
    }

    private func names(_ description: String?, _ displayName: String?) throws(AppleRejection) {
        guard let description else { throw AppleRejection(4_000_107, "The description is required.") }
        guard description.unicodeScalars.count <= 45 else {
            throw AppleRejection(4_000_088, "The description exceeds its maximum length.")
        }
        guard let displayName else { throw AppleRejection(4_000_106, "The displayName is required.") }
        guard displayName.unicodeScalars.count <= 30 else {
            throw AppleRejection(4_000_089, "The displayName exceeds its maximum length.")
        }
    }

    private func refundReason(_ value: String?) throws(AppleRejection) {
        let reasons = [
            "UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER",
            "MODIFY_ITEMS_REFUND", "SIMULATE_REFUND_DECLINE",
        ]
        guard let value else { throw AppleRejection(4_000_156, "The refundReason is required.") }
        guard reasons.contains(value) else { throw AppleRejection(4_000_124, "The refundReason is invalid.") }
    }

    private func effect(_ endpoint: AppleEndpoint, body: Body, now: Int64) -> AdvancedCommerceEffect {
        switch endpoint {
        case .cancelSubscription: .autoRenewOff
        case .revokeSubscription: .revoked(at: now)
        case .requestTransactionRefund:
            body.items?.contains { $0.refundReason == "SIMULATE_REFUND_DECLINE" } == true ? .none : .revoked(at: now)
        default: .none
        }
    }
}

/// What an Advanced Commerce write changes in the simulator's data.
enum AdvancedCommerceEffect: Sendable {
    /// Nothing the simulator models (price and metadata changes, a migration, a declined refund).
    case none
    /// The subscription does not renew.
    case autoRenewOff
    /// The transaction is revoked (refunded) and its subscription does not renew.
    case revoked(at: Int64)
}

extension SimulatedDataset {
    /// Applies `effect` to the transaction and its subscription; nil when the transaction is unknown. Returns the
    /// transaction, its subscription's latest transaction (the transaction itself when it is no subscription) and
    /// the subscription's renewal info.
    mutating func applyAdvancedCommerce(transactionId: String, _ effect: AdvancedCommerceEffect)
        -> (SimulatedTransaction, SimulatedTransaction, SimulatedRenewalInfo?)?
    {
        guard
            let customer = customers.firstIndex(where: { customer in
                customer.transactions.contains { $0.transactionId == transactionId }
            }),
            let index = customers[customer].transactions.firstIndex(where: { $0.transactionId == transactionId })
        else { return nil }
        let original = customers[customer].transactions[index].originalTransactionId
        let renewal = customers[customer].renewals.firstIndex { $0.originalTransactionId == original }
        switch effect {
        case .none:
            break
        case .autoRenewOff:
            if let renewal { customers[customer].renewals[renewal].autoRenewStatus = 0 }
        case .revoked(let at):
            customers[customer].transactions[index].revocationDate = at
            customers[customer].transactions[index].revocationReason = 0
            if let renewal { customers[customer].renewals[renewal].autoRenewStatus = 0 }
        }
        let related = customers[customer].transactions.filter { $0.originalTransactionId == original }
        let latest =
            renewal == nil
            ? customers[customer].transactions[index]
            : related.max { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
                ?? customers[customer].transactions[index]
        return (customers[customer].transactions[index], latest, renewal.map { customers[customer].renewals[$0] })
    }
}
