import AppStoreDomain
import GatewayFoundation

/// The histories of one app in one environment with the indexes the endpoints need. Changes (a refund
/// while a client pages) go through `SimulatedStore`, which owns the lock.
package struct SimulatedDataset: Sendable {
    package let bundleId: String
    package let environment: AppleEnvironment
    package let catalog: ProductCatalog
    package internal(set) var customers: [SimulatedCustomer]
    /// Any transaction id, original transaction id or app transaction id → customer index.
    private var customerByIdentifier: [String: Int] = [:]

    init(bundleId: String, environment: AppleEnvironment, seed: UInt64, customers count: Int, referenceTime: Int64) {
        var generator = HistoryGenerator(
            bundleId: bundleId, environment: environment, seed: seed, referenceTime: referenceTime)
        self.bundleId = bundleId
        self.environment = environment
        catalog = generator.catalog
        customers = generator.customers(count: count)
        for customer in customers {
            customerByIdentifier[customer.appTransactionId] = customer.index
            for transaction in customer.transactions {
                customerByIdentifier[transaction.transactionId] = customer.index
                customerByIdentifier[transaction.originalTransactionId] = customer.index
            }
        }
    }

    /// The customer owning `identifier` (transaction, original transaction or app transaction id).
    package func customer(owning identifier: String) -> SimulatedCustomer? {
        customerByIdentifier[identifier].map { customers[$0] }
    }

    /// The transaction with `transactionId`.
    package func transaction(_ transactionId: String) -> SimulatedTransaction? {
        customer(owning: transactionId)?.transactions.first { $0.transactionId == transactionId }
    }

    /// Every notification of every customer, oldest first.
    package var allNotifications: [SimulatedNotification] {
        customers.flatMap(\.notifications).sorted { ($0.date, $0.notificationUUID) < ($1.date, $1.notificationUUID) }
    }

    /// Refunds `transactionId` at `date`: the record changes (so it moves to the end of an ascending
    /// history) and a REFUND notification is recorded. Returns false for an unknown or revoked transaction.
    mutating func refund(transactionId: String, at date: Int64, prorated: Bool, notificationUUID: String) -> Bool {
        guard let customerIndex = customerByIdentifier[transactionId],
            let index = customers[customerIndex].transactions.firstIndex(where: { $0.transactionId == transactionId }),
            !customers[customerIndex].transactions[index].isRevoked
        else { return false }
        var transaction = customers[customerIndex].transactions[index]
        transaction.revocationDate = date
        transaction.revocationReason = 0
        transaction.revocationType = prorated ? "REFUND_PRORATED" : "REFUND_FULL"
        transaction.revocationPercentage = prorated ? 50_000 : 100_000
        transaction.modifiedDate = max(date, transaction.modifiedDate + 1)
        customers[customerIndex].transactions[index] = transaction
        if let renewal = customers[customerIndex].renewals.firstIndex(where: {
            $0.originalTransactionId == transaction.originalTransactionId
        }) {
            customers[customerIndex].renewals[renewal].status = 5
            customers[customerIndex].renewals[renewal].autoRenewStatus = 0
        }
        customers[customerIndex].notifications.append(
            SimulatedNotification(
                notificationUUID: notificationUUID, notificationType: "REFUND", subtype: nil, date: date,
                transactionId: transactionId, originalTransactionId: transaction.originalTransactionId,
                sendAttempts: [SimulatedSendAttempt(attemptDate: date, result: "SUCCESS")]))
        return true
    }
}

/// All datasets, one per app and environment, behind one lock.
final class SimulatedStore: Sendable {
    private let datasets: Lock<[String: SimulatedDataset]>

    init(apps: [SimulatedApp], seed: UInt64, customersPerApp: Int, referenceTime: Int64) {
        var all: [String: SimulatedDataset] = [:]
        for app in apps {
            for environment in AppleEnvironment.allCases {
                all[Self.key(app.bundleId, environment)] = SimulatedDataset(
                    bundleId: app.bundleId, environment: environment, seed: seed, customers: customersPerApp,
                    referenceTime: referenceTime)
            }
        }
        datasets = Lock(all)
    }

    static func key(_ bundleId: String, _ environment: AppleEnvironment) -> String { "\(bundleId)|\(environment)" }

    /// A snapshot of one dataset.
    func dataset(_ bundleId: String, _ environment: AppleEnvironment) -> SimulatedDataset? {
        datasets.withLock { $0[Self.key(bundleId, environment)] }
    }

    /// Applies `change` to one dataset.
    func update<Result: Sendable>(
        _ bundleId: String, _ environment: AppleEnvironment, _ change: (inout SimulatedDataset) -> Result
    ) -> Result? {
        datasets.withLock { all in
            let key = Self.key(bundleId, environment)
            guard var dataset = all[key] else { return nil }
            let result = change(&dataset)
            all[key] = dataset
            return result
        }
    }
}

extension SimulatedDataset {
    /// Records a notification sent now (it appears in Get Notification History), on the first customer.
    mutating func record(_ notification: SimulatedNotification) {
        guard !customers.isEmpty else { return }
        customers[0].notifications.append(notification)
    }

    /// Appends a send attempt to the notification with `uuid`.
    mutating func recordAttempt(uuid: String, attempt: SimulatedSendAttempt) {
        for index in customers.indices {
            if let found = customers[index].notifications.firstIndex(where: { $0.notificationUUID == uuid }) {
                customers[index].notifications[found].sendAttempts.append(attempt)
                return
            }
        }
    }
}
