import AppStoreDomain

/// One product an app sells, with what the history filters and payloads need to know about it.
package struct SimulatedProduct: Sendable, Hashable {
    /// Apple's payload `type` spellings (Apple's App Store Server API documentation).
    package enum Kind: String, Sendable, Hashable, CaseIterable {
        case autoRenewable = "Auto-Renewable Subscription"
        case nonConsumable = "Non-Consumable"
        case consumable = "Consumable"
        case nonRenewing = "Non-Renewing Subscription"

        /// The matching `productType` filter value of Get Transaction History.
        package var historyFilterType: TransactionHistoryQuery.ProductType {
            switch self {
            case .autoRenewable: .autoRenewable
            case .nonConsumable: .nonConsumable
            case .consumable: .consumable
            case .nonRenewing: .nonRenewable
            }
        }
    }

    package var productId: String
    package var kind: Kind
    /// Subscription group (auto-renewables only).
    package var subscriptionGroupIdentifier: String?
    /// Billing period in months (auto-renewables and non-renewing passes).
    package var periodMonths: Int
    /// Service level inside its group: lower is better, as in App Store Connect.
    package var level: Int
    /// Price in US dollar milliunits.
    package var priceMilliunits: Int64
}

/// The products every simulated app sells: two subscription groups (monthly, yearly and a higher
/// level to upgrade to), a consumable, two non-consumables and a non-renewing pass.
package struct ProductCatalog: Sendable {
    package let products: [SimulatedProduct]
    package let premiumGroup: String
    package let newsGroup: String

    /// The catalog of the app with `bundleId` (product ids are prefixed with it, as developers often do).
    package init(bundleId: String) {
        let prefix = bundleId
        premiumGroup = "2100\(Self.stableNumber(bundleId) % 10_000)"
        newsGroup = "2200\(Self.stableNumber(bundleId) % 10_000)"
        products = [
            SimulatedProduct(
                productId: "\(prefix).premium.monthly", kind: .autoRenewable, subscriptionGroupIdentifier: premiumGroup,
                periodMonths: 1, level: 2, priceMilliunits: 9_990),
            SimulatedProduct(
                productId: "\(prefix).premium.yearly", kind: .autoRenewable, subscriptionGroupIdentifier: premiumGroup,
                periodMonths: 12, level: 2, priceMilliunits: 99_990),
            SimulatedProduct(
                productId: "\(prefix).pro.monthly", kind: .autoRenewable, subscriptionGroupIdentifier: premiumGroup,
                periodMonths: 1, level: 1, priceMilliunits: 19_990),
            SimulatedProduct(
                productId: "\(prefix).news.monthly", kind: .autoRenewable, subscriptionGroupIdentifier: newsGroup,
                periodMonths: 1, level: 1, priceMilliunits: 4_990),
            SimulatedProduct(
                productId: "\(prefix).coins.100", kind: .consumable, subscriptionGroupIdentifier: nil, periodMonths: 0,
                level: 0, priceMilliunits: 990),
            SimulatedProduct(
                productId: "\(prefix).unlock.lifetime", kind: .nonConsumable, subscriptionGroupIdentifier: nil,
                periodMonths: 0, level: 0, priceMilliunits: 49_990),
            SimulatedProduct(
                productId: "\(prefix).remove.ads", kind: .nonConsumable, subscriptionGroupIdentifier: nil,
                periodMonths: 0, level: 0, priceMilliunits: 2_990),
            SimulatedProduct(
                productId: "\(prefix).season.pass", kind: .nonRenewing, subscriptionGroupIdentifier: nil,
                periodMonths: 3, level: 0, priceMilliunits: 14_990),
        ]
    }

    /// The product with `productId`.
    package func product(_ productId: String) -> SimulatedProduct? {
        products.first { $0.productId == productId }
    }

    /// FNV-1a, stable across runs (Swift's `hashValue` is seeded per process).
    static func stableNumber(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash
    }
}

/// A storefront: country (alpha-3), Apple's storefront number, currency and a price factor.
struct Storefront: Sendable {
    var country: String
    var storefrontId: String
    var currency: String
    /// Local price = US price × factor (milliunits stay integral).
    var priceFactor: Double

    static let all: [Storefront] = [
        Storefront(country: "USA", storefrontId: "143441", currency: "USD", priceFactor: 1),
        Storefront(country: "USA", storefrontId: "143441", currency: "USD", priceFactor: 1),
        Storefront(country: "GBR", storefrontId: "143444", currency: "GBP", priceFactor: 0.9),
        Storefront(country: "DEU", storefrontId: "143443", currency: "EUR", priceFactor: 1.1),
        Storefront(country: "FRA", storefrontId: "143442", currency: "EUR", priceFactor: 1.1),
        Storefront(country: "JPN", storefrontId: "143462", currency: "JPY", priceFactor: 150),
        Storefront(country: "CAN", storefrontId: "143455", currency: "CAD", priceFactor: 1.35),
    ]

    func price(_ usdMilliunits: Int64) -> Int64 {
        if currency == "JPY" { return Int64((Double(usdMilliunits) * priceFactor / 1000).rounded()) * 1000 }
        return Int64((Double(usdMilliunits) * priceFactor / 10).rounded()) * 10
    }
}
