import AppStoreDomain
import Foundation
import GatewayFoundation

/// Extend a Subscription Renewal Date, Extend Subscription Renewal Dates for All Active Subscribers and Get Status
/// of Subscription Renewal Date Extensions (Apple's App Store Server API documentation). A single extension moves the
/// subscription's expiry in the dataset; a mass extension is recorded and reported complete at once.
final class RenewalExtensionEndpoints: Sendable {
    private struct MassExtension {
        var bundleId: String
        var environment: AppleEnvironment
        var productId: String
        var at: Int64
        var succeeded: Int
    }

    /// The body shared by both extension requests.
    private struct ExtendBody: Decodable {
        var extendByDays: Int64?
        var extendReasonCode: Int64?
        var requestIdentifier: String?
        var productId: String?
        var storefrontCountryCodes: [String]?
    }

    private let mass = Lock<[String: MassExtension]>([:])
    /// Mass extensions kept (oldest dropped first).
    private let capacity = 1024

    /// Checks the body; returns days to extend.
    private func check(_ body: [UInt8]) throws(AppleRejection) -> (days: Int64, request: ExtendBody) {
        let request = try JSONBody.decode(ExtendBody.self, body)
        guard let days = request.extendByDays, (1...90).contains(days) else {
            throw AppleRejection(4_000_009, "Invalid extend by days value.")
        }
        guard let reason = request.extendReasonCode, (0...3).contains(reason) else {
            throw AppleRejection(4_000_010, "Invalid extend reason code.")
        }
        guard let identifier = request.requestIdentifier, (1...128).contains(identifier.utf8.count) else {
            throw AppleRejection(4_000_011, "Invalid request identifier.")
        }
        return (days, request)
    }

    /// Extends one active subscription by the body's days: `ExtendRenewalDateResponse`.
    func extend(
        originalTransactionId: String, body: [UInt8], store: SimulatedStore, bundleId: String,
        environment: AppleEnvironment
    ) throws(AppleRejection) -> OrderedJSON {
        guard TransactionIdentifier.isWellFormed(originalTransactionId) else {
            throw AppleRejection(4_000_008, "Invalid original transaction id.")
        }
        let (days, _) = try check(body)
        let outcome: Result<OrderedJSON, AppleRejection>? = store.update(bundleId, environment) { dataset in
            dataset.extend(originalTransactionId: originalTransactionId, byDays: days)
        }
        switch outcome {
        case .success(let json)?: return json
        case .failure(let rejection)?: throw rejection
        case nil: throw AppleRejection(4_040_003, "App not found.")
        }
    }

    /// Records a mass extension: `MassExtendRenewalDateResponse`.
    func extendAll(body: [UInt8], dataset: SimulatedDataset, now: WallTime) throws(AppleRejection) -> OrderedJSON {
        let (_, request) = try check(body)
        guard let productId = request.productId, !productId.isEmpty, productId.utf8.count <= 256 else {
            throw AppleRejection(4_000_023, "Invalid product id.")
        }
        for code in request.storefrontCountryCodes ?? [] {
            guard code.utf8.count == 3, code.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
                throw AppleRejection(4_000_028, "Invalid storefront country code.")
            }
        }
        let identifier = request.requestIdentifier ?? ""
        let succeeded = dataset.customers.flatMap(\.renewals).filter { $0.productId == productId && $0.status == 1 }
            .count
        mass.withLock { all in
            if all.count >= capacity, let oldest = all.min(by: { $0.value.at < $1.value.at })?.key {
                all[oldest] = nil
            }
            all[identifier] = MassExtension(
                bundleId: dataset.bundleId, environment: dataset.environment, productId: productId,
                at: now.millisecondsSince1970, succeeded: succeeded)
        }
        return .object([("requestIdentifier", .string(identifier))])
    }

    /// `MassExtendRenewalDateStatusResponse`, or 4040009 for a request this app never made here.
    func status(productId: String, requestIdentifier: String, dataset: SimulatedDataset) throws(AppleRejection)
        -> OrderedJSON
    {
        let found = mass.withLock { $0[requestIdentifier] }
        guard let found, found.bundleId == dataset.bundleId, found.environment == dataset.environment,
            found.productId == productId
        else { throw AppleRejection(4_040_009, "Status request not found.") }
        return .object([
            ("requestIdentifier", .string(requestIdentifier)), ("complete", .bool(true)),
            ("completeDate", .integer(found.at)), ("succeededCount", .integer(Int64(found.succeeded))),
            ("failedCount", .integer(0)),
        ])
    }
}

extension SimulatedDataset {
    /// Moves the expiry of the active subscription `originalTransactionId` by `days`.
    mutating func extend(originalTransactionId: String, byDays days: Int64) -> Result<OrderedJSON, AppleRejection> {
        guard
            let customer = customers.firstIndex(where: { customer in
                customer.renewals.contains { $0.originalTransactionId == originalTransactionId }
            }),
            let renewal = customers[customer].renewals.firstIndex(where: {
                $0.originalTransactionId == originalTransactionId
            })
        else {
            return .failure(AppleRejection(4_040_005, "Original transaction id not found."))
        }
        guard customers[customer].renewals[renewal].status == 1,
            let latest = customers[customer].transactions.indices.filter({
                customers[customer].transactions[$0].originalTransactionId == originalTransactionId
            }).max(by: {
                customers[customer].transactions[$0].purchaseDate < customers[customer].transactions[$1].purchaseDate
            }),
            let expires = customers[customer].transactions[latest].expiresDate
        else {
            return .failure(AppleRejection(4_030_004, "Subscription extension ineligible."))
        }
        let effective = expires + days * 86_400_000
        customers[customer].transactions[latest].expiresDate = effective
        customers[customer].renewals[renewal].renewalDate = effective
        let transaction = customers[customer].transactions[latest]
        var json = JSONObjectBuilder()
        json.add("originalTransactionId", originalTransactionId)
        json.add("webOrderLineItemId", transaction.webOrderLineItemId)
        json.add("success", true)
        json.add("effectiveDate", effective)
        return .success(json.object)
    }
}
