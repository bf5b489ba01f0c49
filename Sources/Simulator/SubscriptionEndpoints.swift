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
        var wanted: Set<Int> = []
        for (name, value) in query where name == "status" {
            guard let status = Int(value), (1...5).contains(status) else {
                throw AppleRejection(4_000_031, "Invalid request. The status parameter is invalid.")
            }
            wanted.insert(status)
        }
        guard let customer = dataset.customer(owning: transactionId) else { throw .transactionIdNotFound() }
        var groups: [String] = []
        var entries: [String: [OrderedJSON]] = [:]
        let signedDate = now.millisecondsSince1970
        for renewal in customer.renewals where wanted.isEmpty || wanted.contains(renewal.status) {
            guard
                let latest = customer.transactions.filter({
                    $0.originalTransactionId == renewal.originalTransactionId
                }).max(by: { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) })
            else { continue }
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
            ("environment", .string(dataset.environment.appleName)), ("bundleId", .string(dataset.bundleId)),
            ("appAppleId", .integer(signer.app.appAppleId)), ("data", .array(data)),
        ])
    }
}
