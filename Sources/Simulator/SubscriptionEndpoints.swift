import AppStoreDomain
import GatewayFoundation

/// Get Transaction Info and Get All Subscription Statuses (Apple's App Store Server API documentation).
struct SubscriptionEndpoints: Sendable {
    /// `{signedTransactionInfo}` for one transaction id.
    func transactionInfo(transactionId: String, dataset: SimulatedDataset, signer: SignedPayloads, now: WallTime)
        throws(AppleRejection) -> OrderedJSON
    {
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        guard let transaction = dataset.transaction(transactionId) else { throw .transactionIdNotFound() }
        return .object([
            (
                "signedTransactionInfo",
                .string(try signer.transaction(transaction, signedDate: now.millisecondsSince1970))
            )
        ])
    }

    /// `StatusResponse`: per subscription group, the latest transaction and renewal info of each
    /// subscription, optionally only those whose `status` is among the repeated `status` parameters (1–5).
    func statuses(
        transactionId: String, query: [(name: String, value: String)], dataset: SimulatedDataset,
        signer: SignedPayloads, now: WallTime
    ) throws(AppleRejection) -> OrderedJSON {
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        let wanted = try Self.wantedStatuses(query)
        guard let customer = dataset.customer(owning: transactionId) else { throw .transactionIdNotFound() }
        let subscriptions: [(SimulatedRenewalInfo, SimulatedTransaction)] = customer.renewals.compactMap { renewal in
            customer.transactions.filter { $0.originalTransactionId == renewal.originalTransactionId }
                .max { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
                .map { (renewal, $0) }
        }
        return try Self.statusResponse(
            subscriptions, wanted: wanted, environment: dataset.environment, bundleId: dataset.bundleId,
            signer: signer, signedDate: now.millisecondsSince1970)
    }

    /// Get Transaction Info and Get All Subscription Statuses for an id of a scripted lifecycle: its state at its
    /// simulated instant, signed then.
    func transactionInfo(transactionId: String, lifecycle state: LifecycleState, signer: SignedPayloads)
        throws(AppleRejection) -> OrderedJSON
    {
        guard let transaction = state.transaction(transactionId) else { throw .transactionIdNotFound() }
        return .object([
            ("signedTransactionInfo", .string(try signer.transaction(transaction, signedDate: state.now)))
        ])
    }

    func statuses(
        transactionId: String, query: [(name: String, value: String)], lifecycle state: LifecycleState,
        signer: SignedPayloads
    ) throws(AppleRejection) -> OrderedJSON {
        let wanted = try Self.wantedStatuses(query)
        guard let records = state.customerSubscriptions(owning: transactionId) else { throw .transactionIdNotFound() }
        return try Self.statusResponse(
            records.map { ($0.renewal, $0.current) }, wanted: wanted, environment: state.environment,
            bundleId: state.bundleId, signer: signer, signedDate: state.now)
    }

    /// The repeated `status` parameters (1–5; none: every status).
    private static func wantedStatuses(_ query: [(name: String, value: String)]) throws(AppleRejection) -> Set<Int> {
        var wanted: Set<Int> = []
        for (name, value) in query where name == "status" {
            guard let status = Int(value), (1...5).contains(status) else {
                throw AppleRejection(4_000_031, "Invalid request. The status parameter is invalid.")
            }
            wanted.insert(status)
        }
        return wanted
    }

    /// The `StatusResponse` body: subscriptions grouped by `subscriptionGroupIdentifier` in first-seen order, each
    /// entry the renewal's status, its latest transaction and the renewal info, signed at `signedDate`.
    static func statusResponse(
        _ subscriptions: [(renewal: SimulatedRenewalInfo, latest: SimulatedTransaction)], wanted: Set<Int>,
        environment: AppleEnvironment, bundleId: String, signer: SignedPayloads, signedDate: Int64
    ) throws(AppleRejection) -> OrderedJSON {
        var groups: [String] = []
        var entries: [String: [OrderedJSON]] = [:]
        for (renewal, latest) in subscriptions where wanted.isEmpty || wanted.contains(renewal.status) {
            if entries[renewal.subscriptionGroupIdentifier] == nil {
                groups.append(renewal.subscriptionGroupIdentifier)
            }
            entries[renewal.subscriptionGroupIdentifier, default: []].append(
                .object([
                    ("status", .integer(Int64(renewal.status))),
                    ("originalTransactionId", .string(renewal.originalTransactionId)),
                    ("signedTransactionInfo", .string(try signer.transaction(latest, signedDate: signedDate))),
                    ("signedRenewalInfo", .string(try signer.renewal(renewal, signedDate: signedDate))),
                ]))
        }
        let data: [OrderedJSON] = groups.map { group in
            .object([
                ("subscriptionGroupIdentifier", .string(group)), ("lastTransactions", .array(entries[group] ?? [])),
            ])
        }
        return .object([
            ("environment", .string(environment.appleName)), ("bundleId", .string(bundleId)),
            ("appAppleId", .integer(signer.app.appAppleId)), ("data", .array(data)),
        ])
    }
}
