import GatewayFoundation
import ProtoCodec

/// Apple's `advancedCommerceInfo` objects (Advanced Commerce API) → typed protos, as forgiving as the rest of
/// `PayloadDecoder`: absent or mistyped fields read as defaults, Apple's string enums stay strings.
enum AdvancedCommerceDecoding {
    static func transactionInfo(_ object: [String: JSONValue]) -> AdvancedCommerceTransactionInfo {
        let p = Fields(object)
        return AdvancedCommerceTransactionInfo(
            descriptors: p.object("descriptors").map(descriptors),
            estimatedTaxMilliunits: p.int64("estimatedTax"),
            items: p.objects("items").map(transactionItem),
            period: p.string("period"),
            requestReferenceId: p.string("requestReferenceId"),
            taxCode: p.string("taxCode"),
            taxExclusivePriceMilliunits: p.int64("taxExclusivePrice"),
            taxRate: p.string("taxRate"))
    }

    static func renewalInfo(_ object: [String: JSONValue]) -> AdvancedCommerceRenewalInfo {
        let p = Fields(object)
        return AdvancedCommerceRenewalInfo(
            consistencyToken: p.string("consistencyToken"),
            descriptors: p.object("descriptors").map(descriptors),
            items: p.objects("items").map(renewalItem),
            period: p.string("period"),
            requestReferenceId: p.string("requestReferenceId"),
            taxCode: p.string("taxCode"))
    }

    private static func descriptors(_ object: [String: JSONValue]) -> AdvancedCommerceDescriptors {
        let p = Fields(object)
        return AdvancedCommerceDescriptors(description: p.string("description"), displayName: p.string("displayName"))
    }

    private static func transactionItem(_ object: [String: JSONValue]) -> AdvancedCommerceTransactionItem {
        let p = Fields(object)
        return AdvancedCommerceTransactionItem(
            sku: p.string("SKU"), description: p.string("description"), displayName: p.string("displayName"),
            offer: p.object("offer").map(offer), priceMilliunits: p.int64("price"),
            refunds: p.objects("refunds").map(refund), revocationDate: p.timestamp("revocationDate"))
    }

    private static func renewalItem(_ object: [String: JSONValue]) -> AdvancedCommerceRenewalItem {
        let p = Fields(object)
        return AdvancedCommerceRenewalItem(
            sku: p.string("SKU"), description: p.string("description"), displayName: p.string("displayName"),
            offer: p.object("offer").map(offer), priceMilliunits: p.int64("price"),
            priceIncreaseInfo: p.object("priceIncreaseInfo").map(priceIncrease))
    }

    private static func offer(_ object: [String: JSONValue]) -> AdvancedCommerceOffer {
        let p = Fields(object)
        return AdvancedCommerceOffer(
            period: p.string("period"), periodCount: p.int32("periodCount"), priceMilliunits: p.int64("price"),
            reason: p.string("reason"))
    }

    private static func refund(_ object: [String: JSONValue]) -> AdvancedCommerceRefund {
        let p = Fields(object)
        return AdvancedCommerceRefund(
            refundAmountMilliunits: p.int64("refundAmount"), refundDate: p.timestamp("refundDate"),
            refundReason: p.string("refundReason"), refundType: p.string("refundType"))
    }

    private static func priceIncrease(_ object: [String: JSONValue]) -> AdvancedCommercePriceIncreaseInfo {
        let p = Fields(object)
        return AdvancedCommercePriceIncreaseInfo(
            dependentSkus: p.strings("dependentSKUs"), priceMilliunits: p.int64("price"), status: p.string("status"))
    }
}
