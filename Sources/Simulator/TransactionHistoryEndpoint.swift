import AppStoreDomain
import GatewayFoundation

/// Get Transaction History V2 and V1 (Apple's App Store Server API documentation): the customer's transactions
/// ordered by last modification, 20 per page, every filter of the endpoint with repeated keys, Apple's 400 codes.
struct TransactionHistoryEndpoint: Sendable {
    static let pageSize = 20

    /// The parsed and validated query.
    struct Filters {
        var revision: HistoryRevision?
        var startDate: Int64?
        var endDate: Int64?
        var productIds: Set<String> = []
        var productTypes: Set<TransactionHistoryQuery.ProductType> = []
        var sort: TransactionHistoryQuery.SortOrder = .ascending
        var subscriptionGroups: Set<String> = []
        var ownership: TransactionHistoryQuery.OwnershipType?
        var revoked: Bool?
        var excludeRevoked = false

        init(_ items: [(name: String, value: String)]) throws(AppleRejection) {
            var seen: Set<String> = []
            for (name, value) in items {
                let repeated = !seen.insert(name).inserted
                switch name {
                case "revision":
                    guard !repeated, let parsed = HistoryRevision(value) else {
                        throw AppleRejection(4_000_005, "Invalid request revision.")
                    }
                    revision = parsed
                case "startDate":
                    guard !repeated, let date = Int64(value), date >= 0 else {
                        throw AppleRejection(4_000_015, "Invalid start date.")
                    }
                    startDate = date
                case "endDate":
                    guard !repeated, let date = Int64(value), date >= 0 else {
                        throw AppleRejection(4_000_016, "Invalid end date.")
                    }
                    endDate = date
                case "productId":
                    guard !value.isEmpty, value.count <= 200 else {
                        throw AppleRejection(4_000_023, "Invalid product id.")
                    }
                    productIds.insert(value)
                case "productType":
                    guard let type = TransactionHistoryQuery.ProductType(rawValue: value) else {
                        throw AppleRejection(4_000_022, "Invalid product type.")
                    }
                    productTypes.insert(type)
                case "sort":
                    guard !repeated, let order = TransactionHistoryQuery.SortOrder(rawValue: value) else {
                        throw AppleRejection(4_000_021, "Invalid sort.")
                    }
                    sort = order
                case "subscriptionGroupIdentifier":
                    guard !value.isEmpty, value.count <= 200 else {
                        throw AppleRejection(4_000_024, "Invalid subscription group identifier.")
                    }
                    subscriptionGroups.insert(value)
                case "inAppOwnershipType":
                    guard !repeated, let type = TransactionHistoryQuery.OwnershipType(rawValue: value) else {
                        throw AppleRejection(4_000_026, "Invalid in-app ownership type.")
                    }
                    ownership = type
                case "revoked":
                    guard !repeated, value == "true" || value == "false" else {
                        throw AppleRejection(4_000_030, "Invalid revoked.")
                    }
                    revoked = value == "true"
                case "excludeRevoked":
                    guard !repeated, value == "true" || value == "false" else {
                        throw AppleRejection(4_000_025, "Invalid exclude revoked.")
                    }
                    excludeRevoked = value == "true"
                default:
                    continue  // Apple ignores parameters it does not know.
                }
            }
            if let startDate, let endDate, startDate >= endDate {
                throw AppleRejection(4_000_013, "Invalid request. The start date is earlier than the end date.")
            }
        }

        func admits(_ transaction: SimulatedTransaction, version1: Bool) -> Bool {
            if version1, transaction.kind == .consumable, transaction.isFinished { return false }
            if let startDate, transaction.purchaseDate < startDate { return false }
            if let endDate, transaction.purchaseDate >= endDate { return false }
            if !productIds.isEmpty, !productIds.contains(transaction.productId) { return false }
            if !productTypes.isEmpty, !productTypes.contains(transaction.productType) { return false }
            if !subscriptionGroups.isEmpty {
                guard let group = transaction.subscriptionGroupIdentifier, subscriptionGroups.contains(group) else {
                    return false
                }
            }
            if let ownership, transaction.inAppOwnershipType != ownership.rawValue { return false }
            if let revoked, transaction.isRevoked != revoked { return false }
            if excludeRevoked, transaction.isRevoked { return false }
            return true
        }
    }

    func respond(
        transactionId: String, query: [(name: String, value: String)], version1: Bool, dataset: SimulatedDataset,
        signer: SignedPayloads, now: WallTime
    ) throws(AppleRejection) -> OrderedJSON {
        guard TransactionIdentifier.isWellFormed(transactionId) else { throw .invalidTransactionId() }
        let filters = try Filters(query)
        guard let customer = dataset.customer(owning: transactionId) else { throw .transactionIdNotFound() }
        let ascending = filters.sort == .ascending
        var matching = customer.transactions.filter { filters.admits($0, version1: version1) }
            .sorted { HistoryRevision($0) < HistoryRevision($1) }
        if !ascending { matching.reverse() }
        if let position = filters.revision {
            matching = matching.filter { ascending ? HistoryRevision($0) > position : HistoryRevision($0) < position }
        }
        let page = Array(matching.prefix(Self.pageSize))
        let revision =
            page.last.map(HistoryRevision.init) ?? filters.revision
            ?? (ascending
                ? HistoryRevision(modifiedDate: now.millisecondsSince1970, transactionNumber: 0)
                : HistoryRevision(modifiedDate: 0, transactionNumber: 0))
        var signed: [OrderedJSON] = []
        for transaction in page {
            // Signed when the record last changed, once: the same history reads back as the same bytes.
            signed.append(
                .string(
                    try signer.transaction(
                        transaction, signedDate: signer.recordSignedDate(transaction.modifiedDate))))
        }
        return .object([
            ("revision", .string(revision.text)), ("hasMore", .bool(matching.count > page.count)),
            ("bundleId", .string(dataset.bundleId)), ("appAppleId", .integer(signer.app.appAppleId)),
            ("environment", .string(dataset.environment.appleName)), ("signedTransactions", .array(signed)),
        ])
    }
}

/// The history's paging position, Apple-style `<modifiedDate>_<transactionId>`: the last record returned.
/// Ordered by modification date, then transaction id, so it is a total order.
struct HistoryRevision: Comparable, Sendable {
    var modifiedDate: Int64
    var transactionNumber: UInt64

    init(modifiedDate: Int64, transactionNumber: UInt64) {
        self.modifiedDate = modifiedDate
        self.transactionNumber = transactionNumber
    }

    init(_ transaction: SimulatedTransaction) {
        modifiedDate = transaction.modifiedDate
        transactionNumber = UInt64(transaction.transactionId) ?? 0
    }

    init?(_ text: String) {
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2, let date = Int64(parts[0]), date >= 0, let number = UInt64(parts[1]) else {
            return nil
        }
        modifiedDate = date
        transactionNumber = number
    }

    var text: String { "\(modifiedDate)_\(transactionNumber)" }

    static func < (lhs: HistoryRevision, rhs: HistoryRevision) -> Bool {
        (lhs.modifiedDate, lhs.transactionNumber) < (rhs.modifiedDate, rhs.transactionNumber)
    }
}
