import AppStoreDomain
import GatewayFoundation

/// The Advanced Commerce API's limits on a field (Apple's Advanced Commerce API documentation and its libraries'
/// checks), refused before any signature or Apple call.
extension RequestContract {
    /// Characters of a SKU.
    static let maxSKUCharacters = 128
    /// Characters of a description.
    static let maxDescriptionCharacters = 45
    /// Characters of a display name.
    static let maxDisplayNameCharacters = 30
    /// Bytes of a tax code.
    static let maxTaxCodeBytes = 256
    /// Bytes of a consistency token (Apple's value, passed back as received).
    static let maxConsistencyTokenBytes = 4096
    /// The largest price or amount in milliunits: ten thousand billion units, far past any real price, so no sum
    /// Apple makes of them can overflow.
    static let maxMilliunits: Int64 = 10_000_000_000_000

    /// Apple's offer periods.
    static let offerPeriods: Set<String> = ["P3D", "P1W", "P2W", "P1M", "P2M", "P3M", "P6M", "P9M", "P1Y"]
    /// Apple's subscription periods.
    static let subscriptionPeriods: Set<String> = ["P1W", "P1M", "P2M", "P3M", "P6M", "P1Y"]
    /// Apple's offer reasons.
    static let offerReasons: Set<String> = ["ACQUISITION", "WIN_BACK", "RETENTION"]
    /// Apple's change reasons.
    static let changeReasons: Set<String> = ["UPGRADE", "DOWNGRADE", "APPLY_OFFER"]
    /// When a change takes effect.
    static let effectiveValues: Set<String> = ["IMMEDIATELY", "NEXT_BILL_CYCLE"]
    /// Apple's refund reasons.
    static let refundReasons: Set<String> = [
        "UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER",
        "MODIFY_ITEMS_REFUND", "SIMULATE_REFUND_DECLINE",
    ]
    /// Apple's refund types.
    static let refundTypes: Set<String> = ["FULL", "PRORATED", "CUSTOM"]

    /// A text Apple counts in characters (Unicode scalars): at most `max` of them, and present when `required`
    /// (Advanced Commerce and Retention Messaging fields alike).
    mutating func text(_ value: String, field: String, max: Int, required: Bool) {
        if value.isEmpty {
            if required { refuse(field, "is required") }
            return
        }
        // Counting stops past the limit: a huge string costs no more than the limit.
        if value.unicodeScalars.prefix(max + 1).count > max { refuse(field, "must be at most \(max) characters") }
    }

    /// A SKU: 1 to 128 characters.
    mutating func sku(_ value: String, field: String, required: Bool = true) {
        text(value, field: field, max: Self.maxSKUCharacters, required: required)
    }

    /// One of Apple's values of an enumeration.
    mutating func oneOf(_ value: String, field: String, allowed: Set<String>, required: Bool = true) {
        if value.isEmpty {
            if required { refuse(field, "is required (one of \(allowed.sorted().joined(separator: ", ")))") }
            return
        }
        if !allowed.contains(value) { refuse(field, "must be one of \(allowed.sorted().joined(separator: ", "))") }
    }

    /// Three upper-case ASCII letters: an ISO 4217 currency or an ISO 3166-1 alpha-3 storefront.
    mutating func threeLetterCode(_ value: String, field: String, what: String, required: Bool) {
        if value.isEmpty {
            if required { refuse(field, "is required (\(what))") }
            return
        }
        if value.utf8.count != 3 || !value.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) {
            refuse(field, "must be \(what): three upper-case letters")
        }
    }

    /// A price or amount in milliunits: 0 to `maxMilliunits`.
    mutating func milliunits(_ value: Int64, field: String) {
        number(value, field: field, in: 0...Self.maxMilliunits)
    }

    /// A tax code: required ones not empty, at most 256 bytes.
    mutating func taxCode(_ value: String, field: String, required: Bool) {
        if value.isEmpty {
            if required { refuse(field, "is required (Apple's tax code for the product)") }
            return
        }
        length(value, field: field, max: Self.maxTaxCodeBytes)
    }

    /// A repeated message field: at most `maxRepeatedValues`; `required` ones not empty.
    mutating func items(_ count: Int, field: String, required: Bool) -> Bool {
        if count == 0 && required {
            refuse(field, "must hold at least one item")
            return false
        }
        return self.count(count, field: field)
    }
}
