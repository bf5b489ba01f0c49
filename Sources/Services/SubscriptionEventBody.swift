import GatewayFoundation
import ProtoCodec

/// The body a team webhook is POSTed: the event in canonical proto3 JSON (`ProtoJSON`: lowerCamelCase names,
/// enums by name, 64-bit integers as strings, Timestamps in RFC 3339, defaults left out), `subscription` and
/// `purchase` included. Deterministic: the same event always has the same bytes, so a dead letter replayed is
/// byte for byte what was sent.
public enum SubscriptionEventBody {
    /// The event as one JSON object.
    public static func json(_ event: SubscriptionEvent) -> [UInt8] { ProtoJSON.encode(event) }

    /// Each event type's proto name.
    public static let eventTypeNames: [SubscriptionEventType: String] = [
        .unspecified: "SUBSCRIPTION_EVENT_TYPE_UNSPECIFIED",
        .initialPurchase: "SUBSCRIPTION_EVENT_TYPE_INITIAL_PURCHASE",
        .renewal: "SUBSCRIPTION_EVENT_TYPE_RENEWAL",
        .cancellation: "SUBSCRIPTION_EVENT_TYPE_CANCELLATION",
        .uncancellation: "SUBSCRIPTION_EVENT_TYPE_UNCANCELLATION",
        .billingIssue: "SUBSCRIPTION_EVENT_TYPE_BILLING_ISSUE",
        .billingRecovery: "SUBSCRIPTION_EVENT_TYPE_BILLING_RECOVERY",
        .gracePeriodExpired: "SUBSCRIPTION_EVENT_TYPE_GRACE_PERIOD_EXPIRED",
        .expiration: "SUBSCRIPTION_EVENT_TYPE_EXPIRATION",
        .refund: "SUBSCRIPTION_EVENT_TYPE_REFUND",
        .refundReversed: "SUBSCRIPTION_EVENT_TYPE_REFUND_REVERSED",
        .revocation: "SUBSCRIPTION_EVENT_TYPE_REVOCATION",
        .productChange: "SUBSCRIPTION_EVENT_TYPE_PRODUCT_CHANGE",
        .renewalExtended: "SUBSCRIPTION_EVENT_TYPE_RENEWAL_EXTENDED",
        .priceIncrease: "SUBSCRIPTION_EVENT_TYPE_PRICE_INCREASE",
        .nonRenewingPurchase: "SUBSCRIPTION_EVENT_TYPE_NON_RENEWING_PURCHASE",
        .nonConsumablePurchase: "SUBSCRIPTION_EVENT_TYPE_NON_CONSUMABLE_PURCHASE",
        .entitlementGranted: "SUBSCRIPTION_EVENT_TYPE_ENTITLEMENT_GRANTED",
        .entitlementRevoked: "SUBSCRIPTION_EVENT_TYPE_ENTITLEMENT_REVOKED",
    ]
}

/// RFC 3339 instants in UTC (`2026-11-29T05:00:00.250Z`), both ways, without Foundation's formatters.
public enum RFC3339 {
    /// `seconds` since the UNIX epoch and `nanos` (0–999,999,999) as `YYYY-MM-DDTHH:MM:SS[.fff[fff[fff]]]Z`.
    public static func format(seconds: Int64, nanos: Int32) -> String {
        let days = seconds.floorDivided(by: 86_400)
        let second = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        var text =
            pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(second / 3600, 2) + ":"
            + pad(second / 60 % 60, 2) + ":" + pad(second % 60, 2)
        let nanos = Int64(max(0, min(nanos, 999_999_999)))
        if nanos != 0 {
            if nanos % 1_000_000 == 0 {
                text += "." + pad(nanos / 1_000_000, 3)
            } else if nanos % 1000 == 0 {
                text += "." + pad(nanos / 1000, 6)
            } else {
                text += "." + pad(nanos, 9)
            }
        }
        return text + "Z"
    }

    /// Milliseconds since the UNIX epoch of an RFC 3339 instant (`2026-11-29T05:00:00Z`,
    /// `2026-11-29T06:00:00.5+01:00`, `t`/`z` accepted); nil when it is not one.
    public static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[from..<(from + count)] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(bytes[10]),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                if digits < 3 { millis = millis * 10 + Int64(bytes[index] - 0x30) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        guard index < bytes.count else { return nil }
        var offset: Int64 = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                let hours = number(index + 1, 2), let minutes = number(index + 4, 2), hours < 24, minutes < 60
            else { return nil }
            offset = (hours * 60 + minutes) * 60 * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
            index += 6
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return seconds * 1000 + millis
    }

    /// Howard Hinnant's `civil_from_days`: the proleptic Gregorian date of a day count since 1970-01-01.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Howard Hinnant's `days_from_civil`.
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
