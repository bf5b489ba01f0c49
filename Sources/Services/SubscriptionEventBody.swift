import GatewayFoundation
import ProtoCodec

/// The body a team webhook is POSTed: the event in canonical proto3 JSON (`ProtoJSON`: lowerCamelCase names,
/// enums by name, 64-bit integers as strings, Timestamps in RFC 3339, defaults left out), `subscription` and
/// `purchase` included. Deterministic: the same event always has the same bytes, so a dead letter replayed is
/// byte for byte what was sent.
package enum SubscriptionEventBody {
    /// The event as one JSON object.
    package static func json(_ event: SubscriptionEvent) -> [UInt8] { ProtoJSON.encode(event) }

    /// Each event type's proto name.
    package static let eventTypeNames: [SubscriptionEventType: String] = [
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
