/// One app's default realtime answer: `notifications.realtime.defaults[i]` with `app`, and `messageIdentifier`
/// plus, for a switch-plan message, `productId` (and optional `billingPlanType`), or for a promotional
/// offer `productId`, `offerIdentifier` and `signature` (v2, the default, or v1), signed when answered.
package enum RealtimeDefault: Sendable, Hashable {
    /// Apple's `message`.
    case message(messageIdentifier: String)
    /// Apple's `alternateProduct`.
    case alternateProduct(messageIdentifier: String, productId: String, billingPlanType: String)
    /// Apple's `promotionalOffer`, signed with the app's key when answered (`v1`: the StoreKit 1 signature).
    case promotionalOffer(messageIdentifier: String, productId: String, offerIdentifier: String, v1: Bool)
}
