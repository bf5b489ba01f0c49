import Foundation

/// Steps as the control surface writes and reads them:
/// `{"step": "failToRenew", "advance": "expiry", "gracePeriod": true}`. Members: `step` (an event's name),
/// `advance` (`0`, a number with `ms`, `s`, `m`, `h` or `d`, or `expiry`, `gracePeriodEnd`, `billingRetryEnd`;
/// default `0`), and the event's own: `product` and `offer` (buy), `gracePeriod` (failToRenew), `product`
/// (upgrade, downgrade, crossgrade, purchase), `period` or `product` (refund, declineRefund, reverseRefund; neither:
/// the current period), `days` (extendRenewal). Any other member is refused.
extension LifecycleStep {
    /// The step as JSON.
    package var json: OrderedJSON {
        var members: [(String, OrderedJSON)] = [("step", .string(event.name)), ("advance", .string(advance.text))]
        switch event {
        case .buy(let product, let offer):
            members.append(("product", .string(product)))
            if let offer { members.append(("offer", .string(offer.rawValue))) }
        case .failToRenew(let gracePeriod): members.append(("gracePeriod", .bool(gracePeriod)))
        case .upgrade(let product), .downgrade(let product), .crossgrade(let product), .purchase(let product):
            members.append(("product", .string(product)))
        case .refund(let target), .declineRefund(let target), .reverseRefund(let target):
            switch target {
            case .currentPeriod: break
            case .period(let number): members.append(("period", .integer(Int64(number))))
            case .purchase(let product): members.append(("product", .string(product)))
            }
        case .extendRenewal(let days): members.append(("days", .integer(Int64(days))))
        default: break
        }
        return .object(members)
    }

    /// Reads a step from a decoded JSON object (`JSONSerialization`); the error names the member at fault.
    package init(json object: [String: Any]) throws(LifecycleStepError) {
        guard let name = object["step"] as? String else {
            throw LifecycleStepError("step: the event's name is required")
        }
        let allowed: Set<String>
        switch name {
        case "buy": allowed = ["product", "offer"]
        case "failToRenew": allowed = ["gracePeriod"]
        case "upgrade", "downgrade", "crossgrade", "purchase": allowed = ["product"]
        case "refund", "declineRefund", "reverseRefund": allowed = ["period", "product"]
        case "extendRenewal": allowed = ["days"]
        default: allowed = []
        }
        if let unknown = object.keys.sorted().first(where: { !allowed.union(["step", "advance"]).contains($0) }) {
            throw LifecycleStepError("\(unknown): not a member of step \(Self.bounded(name))")
        }
        func text(_ key: String) throws(LifecycleStepError) -> String {
            guard let value = object[key] as? String, (1...256).contains(value.utf8.count) else {
                throw LifecycleStepError("\(key): a string is required for step \(name)")
            }
            return value
        }
        let event: LifecycleEvent
        switch name {
        case "buy":
            var offer: LifecycleOffer?
            if object["offer"] != nil {
                guard let named = (object["offer"] as? String).flatMap(LifecycleOffer.init(rawValue:)) else {
                    throw LifecycleStepError("offer: one of freeTrial, introductory, promotional, offerCode")
                }
                offer = named
            }
            event = .buy(product: try text("product"), offer: offer)
        case "failToRenew":
            guard object["gracePeriod"] == nil || object["gracePeriod"] is Bool else {
                throw LifecycleStepError("gracePeriod: true or false")
            }
            event = .failToRenew(gracePeriod: object["gracePeriod"] as? Bool ?? false)
        case "upgrade": event = .upgrade(to: try text("product"))
        case "downgrade": event = .downgrade(to: try text("product"))
        case "crossgrade": event = .crossgrade(to: try text("product"))
        case "purchase": event = .purchase(product: try text("product"))
        case "refund", "declineRefund", "reverseRefund":
            var target = LifecycleRefundTarget.currentPeriod
            if object["product"] != nil {
                target = .purchase(product: try text("product"))
            } else if object["period"] != nil {
                guard let number = object["period"] as? Int, (1...10_000).contains(number) else {
                    throw LifecycleStepError("period: a positive integer (1 is the first purchase)")
                }
                target = .period(number)
            }
            event =
                name == "refund"
                ? .refund(target) : name == "declineRefund" ? .declineRefund(target) : .reverseRefund(target)
        case "extendRenewal":
            guard let days = object["days"] as? Int, (1...90).contains(days) else {
                throw LifecycleStepError("days: an integer 1…90")
            }
            event = .extendRenewal(days: days)
        default:
            guard let simple = LifecycleEvent.withoutParameters[name] else {
                throw LifecycleStepError("step: unknown event \(Self.bounded(name))")
            }
            event = simple
        }
        var advance = LifecycleAdvance.none
        if let value = object["advance"] {
            guard let text = value as? String, let parsed = LifecycleAdvance(text: text) else {
                throw LifecycleStepError(
                    "advance: 0, a number with ms, s, m, h or d, or expiry, gracePeriodEnd, billingRetryEnd")
            }
            advance = parsed
        }
        self.init(event, after: advance)
    }

    /// A name quoted in an error, cut short.
    static func bounded(_ text: String) -> String { "'\(text.prefix(64))'" }
}

extension LifecycleEvent {
    /// The event's name in JSON (its case name).
    package var name: String {
        switch self {
        case .buy: "buy"
        case .renew: "renew"
        case .failToRenew: "failToRenew"
        case .expireGracePeriod: "expireGracePeriod"
        case .recover: "recover"
        case .disableAutoRenew: "disableAutoRenew"
        case .enableAutoRenew: "enableAutoRenew"
        case .upgrade: "upgrade"
        case .downgrade: "downgrade"
        case .crossgrade: "crossgrade"
        case .announcePriceIncrease: "announcePriceIncrease"
        case .acceptPriceIncrease: "acceptPriceIncrease"
        case .refund: "refund"
        case .declineRefund: "declineRefund"
        case .reverseRefund: "reverseRefund"
        case .shareWithFamily: "shareWithFamily"
        case .revokeFamilySharing: "revokeFamilySharing"
        case .extendRenewal: "extendRenewal"
        case .purchase: "purchase"
        case .expire: "expire"
        }
    }

    /// The events that take no member, by name.
    static let withoutParameters: [String: LifecycleEvent] = Dictionary(
        uniqueKeysWithValues: [
            .renew, .expireGracePeriod, .recover, .disableAutoRenew, .enableAutoRenew, .announcePriceIncrease,
            .acceptPriceIncrease, .shareWithFamily, .revokeFamilySharing, .expire,
        ].map { ($0.name, $0) })
}

extension LifecycleAdvance {
    /// Reads `0`, `250ms`, `90s`, `15m`, `12h`, `30d`, `expiry`, `gracePeriodEnd` or `billingRetryEnd`.
    package init?(text: String) {
        switch text {
        case "expiry": self = .toExpiry
        case "gracePeriodEnd": self = .toGracePeriodEnd
        case "billingRetryEnd": self = .toBillingRetryEnd
        case "0": self = .none
        default:
            let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
            guard let (suffix, scale) = units.first(where: { text.hasSuffix($0.0) }),
                let count = Int64(text.dropLast(suffix.count)), count >= 0, count <= 10_000_000
            else { return nil }
            self = .by(milliseconds: count * scale)
        }
    }

    /// The text `init(text:)` reads back: the largest unit that divides it exactly.
    package var text: String {
        switch self {
        case .toExpiry: return "expiry"
        case .toGracePeriodEnd: return "gracePeriodEnd"
        case .toBillingRetryEnd: return "billingRetryEnd"
        case .by(let milliseconds):
            if milliseconds == 0 { return "0" }
            for (suffix, scale) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
            where milliseconds % scale == 0 {
                return "\(milliseconds / scale)\(suffix)"
            }
            return "\(milliseconds)ms"
        }
    }
}
