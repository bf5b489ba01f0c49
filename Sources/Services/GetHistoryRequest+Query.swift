import AppStoreDomain
import ProtoCodec

/// What a GetHistoryRequest asks of Apple, checked: the query, the environment, the id.
struct HistoryCallPlan: Sendable, Hashable {
    /// Any transaction id of the customer.
    var transactionID: String
    /// Apple's filters and the first page's revision.
    var query: TransactionHistoryQuery
    /// The one environment asked for; nil = as the app is configured.
    var environment: AppleEnvironment?
}

extension GetHistoryRequest {
    /// Maps every filter to Apple's query (proto enums to Apple's strings, UNSPECIFIED omitted, `revoked`
    /// as a tri-state, timestamps to UNIX ms). A bad value is INVALID_ARGUMENT naming the proto field.
    func callPlan() throws(GatewayError) -> HistoryCallPlan {
        guard !transactionId.isEmpty else {
            throw .invalidArgument(field: "transaction_id", problem: "is required (any transaction id of the customer)")
        }
        guard transactionId.utf8.count <= 128, !transactionId.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw .invalidArgument(field: "transaction_id", problem: "must be an App Store transaction id")
        }
        let start = try Self.milliseconds(startDate, field: "start_date")
        let end = try Self.milliseconds(endDate, field: "end_date")
        if let start, let end, end <= start {
            throw .invalidArgument(field: "end_date", problem: "must be later than start_date")
        }
        if productIds.contains(where: \.isEmpty) {
            throw .invalidArgument(field: "product_ids", problem: "must not contain an empty id")
        }
        if subscriptionGroupIdentifiers.contains(where: \.isEmpty) {
            throw .invalidArgument(field: "subscription_group_identifiers", problem: "must not contain an empty id")
        }
        var types: [TransactionHistoryQuery.ProductType] = []
        for (index, type) in productTypes.enumerated() {
            switch type {
            case .unspecified: continue
            case .autoRenewable: types.append(.autoRenewable)
            case .nonRenewable: types.append(.nonRenewable)
            case .consumable: types.append(.consumable)
            case .nonConsumable: types.append(.nonConsumable)
            case .unrecognized(let value):
                throw .invalidArgument(field: "product_types[\(index)]", problem: "unknown ProductType \(value)")
            }
        }
        let sortOrder: TransactionHistoryQuery.SortOrder?
        switch sort {
        case .unspecified: sortOrder = nil
        case .ascending: sortOrder = .ascending
        case .descending: sortOrder = .descending
        case .unrecognized(let value):
            throw .invalidArgument(field: "sort", problem: "unknown HistorySortOrder \(value)")
        }
        let ownership: TransactionHistoryQuery.OwnershipType?
        switch inAppOwnershipType {
        case .unspecified: ownership = nil
        case .purchased: ownership = .purchased
        case .familyShared: ownership = .familyShared
        case .unrecognized(let value):
            throw .invalidArgument(field: "in_app_ownership_type", problem: "unknown InAppOwnershipType \(value)")
        }
        let revokedFilter: Bool?
        switch revoked {
        case .unspecified: revokedFilter = nil
        case .onlyRevoked: revokedFilter = true
        case .excludeRevoked: revokedFilter = false
        case .unrecognized(let value):
            throw .invalidArgument(field: "revoked", problem: "unknown RevokedFilter \(value)")
        }
        let appleEnvironment: AppleEnvironment?
        switch environment {
        case .unspecified: appleEnvironment = nil
        case .production: appleEnvironment = .production
        case .sandbox: appleEnvironment = .sandbox
        case .xcode, .localTesting:
            throw .invalidArgument(
                field: "environment",
                problem: "Xcode and LocalTesting data are signed locally; Apple has no server for them")
        case .unrecognized(let value):
            throw .invalidArgument(field: "environment", problem: "unknown Environment \(value)")
        }
        let query = TransactionHistoryQuery(
            revision: revision, startDate: start, endDate: end, productIds: productIds, productTypes: types,
            sort: sortOrder, subscriptionGroupIdentifiers: subscriptionGroupIdentifiers,
            inAppOwnershipType: ownership, revoked: revokedFilter)
        try query.validate()
        return HistoryCallPlan(transactionID: transactionId, query: query, environment: appleEnvironment)
    }

    /// A timestamp as UNIX ms; nil when unset. Before 1970, nanos outside 0..<1e9, or after year 9999 is invalid.
    private static func milliseconds(_ timestamp: ProtoTimestamp?, field: String) throws(GatewayError) -> Int64? {
        guard let timestamp else { return nil }
        guard timestamp.nanos >= 0, timestamp.nanos < 1_000_000_000 else {
            throw .invalidArgument(field: field, problem: "nanos must be between 0 and 999999999")
        }
        guard timestamp.seconds >= 0, timestamp.seconds <= 253_402_300_799 else {
            throw .invalidArgument(field: field, problem: "must be between 1970-01-01 and 9999-12-31")
        }
        return timestamp.unixMilliseconds
    }
}
