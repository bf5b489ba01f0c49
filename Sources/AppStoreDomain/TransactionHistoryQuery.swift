import GatewayFoundation

/// The query of Get Transaction History (Apple's App Store Server API documentation), encoded exactly as Apple expects.
package struct TransactionHistoryQuery: Sendable, Hashable {
    /// `productType` filter values.
    package enum ProductType: String, Sendable, Hashable, CaseIterable {
        /// Auto-renewable subscriptions.
        case autoRenewable = "AUTO_RENEWABLE"
        /// Non-renewing subscriptions.
        case nonRenewable = "NON_RENEWABLE"
        /// Consumables.
        case consumable = "CONSUMABLE"
        /// Non-consumables.
        case nonConsumable = "NON_CONSUMABLE"
    }

    /// `sort` values; Apple orders by the record's last-modified date.
    package enum SortOrder: String, Sendable, Hashable, CaseIterable {
        /// Oldest first (Apple's default).
        case ascending = "ASCENDING"
        /// Newest first.
        case descending = "DESCENDING"
    }

    /// `inAppOwnershipType` values.
    package enum OwnershipType: String, Sendable, Hashable, CaseIterable {
        /// Shared through Family Sharing.
        case familyShared = "FAMILY_SHARED"
        /// Bought by the account itself.
        case purchased = "PURCHASED"
    }

    /// Paging token from the previous response; nil on the first page.
    package var revision: String?
    /// Only records with `purchaseDate >= startDate` (UNIX ms).
    package var startDate: Int64?
    /// Only records with `purchaseDate < endDate` (UNIX ms).
    package var endDate: Int64?
    /// Product ids, each sent as its own `productId`.
    package var productIds: [String]
    /// Product types, each sent as its own `productType`.
    package var productTypes: [ProductType]
    /// Sort order; nil leaves Apple's default.
    package var sort: SortOrder?
    /// Subscription group ids, each sent as its own `subscriptionGroupIdentifier`.
    package var subscriptionGroupIdentifiers: [String]
    /// Ownership filter.
    package var inAppOwnershipType: OwnershipType?
    /// true: only revoked; false: only not revoked; nil: both.
    package var revoked: Bool?

    /// A query; everything defaults to unset. An empty `revision` counts as none.
    package init(
        revision: String? = nil, startDate: Int64? = nil, endDate: Int64? = nil, productIds: [String] = [],
        productTypes: [ProductType] = [], sort: SortOrder? = nil, subscriptionGroupIdentifiers: [String] = [],
        inAppOwnershipType: OwnershipType? = nil, revoked: Bool? = nil
    ) {
        self.revision = revision?.isEmpty == true ? nil : revision
        self.startDate = startDate
        self.endDate = endDate
        self.productIds = productIds
        self.productTypes = productTypes
        self.sort = sort
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.inAppOwnershipType = inAppOwnershipType
        self.revoked = revoked
    }

    /// The same filters with another page's `revision` (Apple requires identical filters when paging).
    package func nextPage(revision: String) -> TransactionHistoryQuery {
        var next = self
        next.revision = revision
        return next
    }

    /// Name/value pairs in a fixed order: §2.1's order, repeated keys in the order given, unset omitted.
    package var parameters: [(name: String, value: String)] {
        var items: [(name: String, value: String)] = []
        if let revision { items.append(("revision", revision)) }
        if let startDate { items.append(("startDate", String(startDate))) }
        if let endDate { items.append(("endDate", String(endDate))) }
        items += productIds.map { ("productId", $0) }
        items += productTypes.map { ("productType", $0.rawValue) }
        if let sort { items.append(("sort", sort.rawValue)) }
        items += subscriptionGroupIdentifiers.map { ("subscriptionGroupIdentifier", $0) }
        if let inAppOwnershipType { items.append(("inAppOwnershipType", inAppOwnershipType.rawValue)) }
        if let revoked { items.append(("revoked", revoked ? "true" : "false")) }
        return items
    }

    /// The percent-encoded query without the leading `?`; empty when nothing is set.
    package var queryString: String {
        parameters.map { PercentEncoding.encode($0.name) + "=" + PercentEncoding.encode($0.value) }
            .joined(separator: "&")
    }

    /// Rejects what Apple would reject with a 400, naming the field.
    package func validate() throws(GatewayError) {
        if let startDate, startDate < 0 {
            throw .invalidArgument(field: "startDate", problem: "must be a UNIX time in milliseconds, not negative")
        }
        if let endDate, endDate < 0 {
            throw .invalidArgument(field: "endDate", problem: "must be a UNIX time in milliseconds, not negative")
        }
        if let startDate, let endDate, endDate <= startDate {
            throw .invalidArgument(field: "endDate", problem: "must be later than startDate")
        }
        if productIds.contains(where: \.isEmpty) {
            throw .invalidArgument(field: "productIds", problem: "must not contain an empty id")
        }
        if subscriptionGroupIdentifiers.contains(where: \.isEmpty) {
            throw .invalidArgument(field: "subscriptionGroupIdentifiers", problem: "must not contain an empty id")
        }
    }
}
