import AppStoreDomain
import Foundation
import GatewayFoundation
import ProtoCodec

// The Advanced Commerce API's request objects as Apple names their members, each checked against the contract
// while it is built (a violation is refused into the contract, named by its field path).

extension AdvancedCommerceRequestInfo {
    /// `requestInfo`; an empty reference id becomes `generated` (nil: it is required).
    func json(_ field: String, generated: String?, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        contract.uuid(requestReferenceId, field: "\(field).request_reference_id", required: generated == nil)
        let reference = requestReferenceId.isEmpty ? (generated ?? "") : requestReferenceId
        // Apple's libraries send UUIDs lower-cased.
        object.add("requestReferenceId", .string(reference.lowercased()))
        contract.uuid(appAccountToken, field: "\(field).app_account_token", required: false)
        object.add("appAccountToken", ifPresent: appAccountToken.lowercased())
        contract.length(
            consistencyToken, field: "\(field).consistency_token", max: RequestContract.maxConsistencyTokenBytes)
        object.add("consistencyToken", ifPresent: consistencyToken)
        return object.json
    }
}

extension AdvancedCommerceDescriptors {
    /// `descriptors`: both names required.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        names(field, description: description, displayName: displayName, required: true, &contract, into: &object)
        return object.json
    }
}

extension AdvancedCommerceDescriptorsChange {
    /// `descriptors` of a change: `effective` required, each name optional.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        contract.oneOf(effective, field: "\(field).effective", allowed: RequestContract.effectiveValues)
        object.add("effective", .string(effective))
        names(field, description: description, displayName: displayName, required: false, &contract, into: &object)
        return object.json
    }
}

extension AdvancedCommerceOffer {
    /// `offer`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        contract.oneOf(period, field: "\(field).period", allowed: RequestContract.offerPeriods)
        contract.number(Int64(periodCount), field: "\(field).period_count", in: 1...12)
        contract.milliunits(priceMilliunits, field: "\(field).price_milliunits")
        contract.oneOf(reason, field: "\(field).reason", allowed: RequestContract.offerReasons)
        return .object([
            ("period", .string(period)), ("periodCount", .integer(Int64(periodCount))),
            ("price", .integer(priceMilliunits)), ("reason", .string(reason)),
        ])
    }
}

/// A SKU with its names and, when given, a price: the members every item kind starts with.
private func itemMembers(
    _ field: String, sku: String, description: String, displayName: String, price: Int64?,
    _ contract: inout RequestContract
) -> AdvancedCommerceJSONObject {
    var object = AdvancedCommerceJSONObject()
    contract.sku(sku, field: "\(field).sku")
    object.add("SKU", .string(sku))
    names(field, description: description, displayName: displayName, required: true, &contract, into: &object)
    if let price {
        contract.milliunits(price, field: "\(field).price")
        object.add("price", .integer(price))
    }
    return object
}

/// `description` and `displayName`, each checked against Apple's limits; optional ones are left out when empty.
private func names(
    _ field: String, description: String, displayName: String, required: Bool, _ contract: inout RequestContract,
    into object: inout AdvancedCommerceJSONObject
) {
    contract.text(
        description, field: "\(field).description", max: RequestContract.maxDescriptionCharacters, required: required)
    contract.text(
        displayName, field: "\(field).display_name", max: RequestContract.maxDisplayNameCharacters,
        required: required)
    if required {
        object.add("description", .string(description))
        object.add("displayName", .string(displayName))
    } else {
        object.add("description", ifPresent: description)
        object.add("displayName", ifPresent: displayName)
    }
}

/// A list of messages as a JSON array, each checked; nil for more values than the contract allows.
private func list<Element>(
    _ values: [Element], _ field: String, required: Bool, _ contract: inout RequestContract,
    _ json: (Element, String, inout RequestContract) -> AdvancedCommerceJSON
) -> [AdvancedCommerceJSON] {
    guard contract.items(values.count, field: field, required: required) else { return [] }
    return values.enumerated().map { index, value in json(value, "\(field)[\(index)]", &contract) }
}

/// SKUs as Apple's `[{"SKU": …}]`.
private func skuList(_ values: [String], _ field: String, _ contract: inout RequestContract) -> [AdvancedCommerceJSON] {
    list(values, field, required: false, &contract) { sku, path, contract in
        contract.sku(sku, field: path)
        return .object([("SKU", .string(sku))])
    }
}

extension AdvancedCommerceOneTimeChargeCreate {
    /// `OneTimeChargeCreateRequest`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        object.add("operation", .string("CREATE_ONE_TIME_CHARGE"))
        object.add("version", .string("1"))
        object.add("requestInfo", requestInfoJSON(requestInfo, field, &contract))
        contract.threeLetterCode(currency, field: "\(field).currency", what: "an ISO 4217 currency", required: true)
        object.add("currency", .string(currency))
        if let item {
            object.add(
                "item",
                itemMembers(
                    "\(field).item", sku: item.sku, description: item.description, displayName: item.displayName,
                    price: item.price, &contract
                ).json)
        } else {
            contract.refuse("\(field).item", "is required")
        }
        contract.taxCode(taxCode, field: "\(field).tax_code", required: true)
        object.add("taxCode", .string(taxCode))
        contract.threeLetterCode(
            storefront, field: "\(field).storefront", what: "an ISO 3166-1 alpha-3 storefront", required: false)
        object.add("storefront", ifPresent: storefront)
        return object.json
    }
}

extension AdvancedCommerceSubscriptionCreate {
    /// `SubscriptionCreateRequest`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        object.add("operation", .string("CREATE_SUBSCRIPTION"))
        object.add("version", .string("1"))
        object.add("requestInfo", requestInfoJSON(requestInfo, field, &contract))
        contract.threeLetterCode(currency, field: "\(field).currency", what: "an ISO 4217 currency", required: true)
        object.add("currency", .string(currency))
        object.add("descriptors", requiredDescriptors(descriptors, "\(field).descriptors", &contract))
        object.add(
            "items",
            .array(
                list(items, "\(field).items", required: true, &contract) { item, path, contract in
                    var members = itemMembers(
                        path, sku: item.sku, description: item.description, displayName: item.displayName,
                        price: item.price, &contract)
                    members.add("offer", ifPresent: item.offer.map { $0.json("\(path).offer", &contract) })
                    return members.json
                }))
        contract.oneOf(period, field: "\(field).period", allowed: RequestContract.subscriptionPeriods)
        object.add("period", .string(period))
        contract.taxCode(taxCode, field: "\(field).tax_code", required: true)
        object.add("taxCode", .string(taxCode))
        contract.transactionID(previousTransactionId, field: "\(field).previous_transaction_id", required: false)
        object.add("previousTransactionId", ifPresent: previousTransactionId)
        contract.threeLetterCode(
            storefront, field: "\(field).storefront", what: "an ISO 3166-1 alpha-3 storefront", required: false)
        object.add("storefront", ifPresent: storefront)
        return object.json
    }
}

extension AdvancedCommerceSubscriptionModify {
    /// `SubscriptionModifyInAppRequest`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        object.add("operation", .string("MODIFY_SUBSCRIPTION"))
        object.add("version", .string("1"))
        object.add("requestInfo", requestInfoJSON(requestInfo, field, &contract))
        contract.transactionID(transactionId, field: "\(field).transaction_id", required: true)
        object.add("transactionId", .string(transactionId))
        object.add("retainBillingCycle", .bool(retainBillingCycle))
        let added = list(addItems, "\(field).add_items", required: false, &contract) { item, path, contract in
            var members = itemMembers(
                path, sku: item.sku, description: item.description, displayName: item.displayName,
                price: item.price, &contract)
            members.add("offer", ifPresent: item.offer.map { $0.json("\(path).offer", &contract) })
            if let prorated = item.proratedPrice {
                contract.milliunits(prorated.value, field: "\(path).prorated_price")
                members.add("proratedPrice", .integer(prorated.value))
            }
            return members.json
        }
        object.add("addItems", ifPresent: added)
        let changed = list(changeItems, "\(field).change_items", required: false, &contract) { item, path, contract in
            var members = AdvancedCommerceJSONObject()
            contract.sku(item.currentSku, field: "\(path).current_sku")
            members.add("currentSKU", .string(item.currentSku))
            for (key, value) in itemMembers(
                path, sku: item.sku, description: item.description, displayName: item.displayName,
                price: item.price, &contract
            ).members {
                members.add(key, value)
            }
            contract.oneOf(item.reason, field: "\(path).reason", allowed: RequestContract.changeReasons)
            members.add("reason", .string(item.reason))
            contract.oneOf(item.effective, field: "\(path).effective", allowed: RequestContract.effectiveValues)
            members.add("effective", .string(item.effective))
            members.add("offer", ifPresent: item.offer.map { $0.json("\(path).offer", &contract) })
            if let prorated = item.proratedPrice {
                contract.milliunits(prorated.value, field: "\(path).prorated_price")
                members.add("proratedPrice", .integer(prorated.value))
            }
            return members.json
        }
        object.add("changeItems", ifPresent: changed)
        object.add("removeItems", ifPresent: skuList(removeSkus, "\(field).remove_skus", &contract))
        contract.threeLetterCode(currency, field: "\(field).currency", what: "an ISO 4217 currency", required: false)
        object.add("currency", ifPresent: currency)
        object.add("descriptors", ifPresent: descriptors.map { $0.json("\(field).descriptors", &contract) })
        if let periodChange {
            contract.oneOf(
                periodChange.effective, field: "\(field).period_change.effective",
                allowed: RequestContract.effectiveValues)
            contract.oneOf(
                periodChange.period, field: "\(field).period_change.period",
                allowed: RequestContract.subscriptionPeriods)
            object.add(
                "periodChange",
                .object([("effective", .string(periodChange.effective)), ("period", .string(periodChange.period))]))
        }
        contract.threeLetterCode(
            storefront, field: "\(field).storefront", what: "an ISO 3166-1 alpha-3 storefront", required: false)
        object.add("storefront", ifPresent: storefront)
        contract.taxCode(taxCode, field: "\(field).tax_code", required: false)
        object.add("taxCode", ifPresent: taxCode)
        return object.json
    }
}

extension AdvancedCommerceSubscriptionReactivate {
    /// `SubscriptionReactivateInAppRequest`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        object.add("operation", .string("REACTIVATE_SUBSCRIPTION"))
        object.add("version", .string("1"))
        object.add("requestInfo", requestInfoJSON(requestInfo, field, &contract))
        contract.transactionID(transactionId, field: "\(field).transaction_id", required: true)
        object.add("transactionId", .string(transactionId))
        object.add("items", ifPresent: skuList(skus, "\(field).skus", &contract))
        contract.threeLetterCode(
            storefront, field: "\(field).storefront", what: "an ISO 3166-1 alpha-3 storefront", required: false)
        object.add("storefront", ifPresent: storefront)
        return object.json
    }
}

/// An in-app request's `requestInfo`, required with its reference id: the app hands the signature to StoreKit,
/// and the id is how the purchase is found again.
private func requestInfoJSON(
    _ info: AdvancedCommerceRequestInfo?, _ field: String, _ contract: inout RequestContract
) -> AdvancedCommerceJSON {
    guard let info else {
        contract.refuse("\(field).request_info", "is required (with a request_reference_id)")
        return .object([])
    }
    return info.json("\(field).request_info", generated: nil, &contract)
}

/// Required `descriptors`.
func requiredDescriptors(
    _ descriptors: AdvancedCommerceDescriptors?, _ field: String, _ contract: inout RequestContract
) -> AdvancedCommerceJSON {
    guard let descriptors else {
        contract.refuse(field, "is required")
        return .object([])
    }
    return descriptors.json(field, &contract)
}

extension AdvancedCommercePriceChangeItem {
    /// `SubscriptionPriceChangeItem`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        contract.sku(sku, field: "\(field).sku")
        object.add("SKU", .string(sku))
        contract.milliunits(price, field: "\(field).price")
        object.add("price", .integer(price))
        if contract.count(dependentSkus.count, field: "\(field).dependent_skus") {
            for (index, dependent) in dependentSkus.enumerated() {
                contract.sku(dependent, field: "\(field).dependent_skus[\(index)]")
            }
            object.add("dependentSKUs", ifPresent: dependentSkus.map { .string($0) })
        }
        return object.json
    }
}

extension AdvancedCommerceMetadataItem {
    /// `SubscriptionChangeMetadataItem`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        contract.sku(currentSku, field: "\(field).current_sku")
        object.add("currentSKU", .string(currentSku))
        contract.oneOf(effective, field: "\(field).effective", allowed: RequestContract.effectiveValues)
        object.add("effective", .string(effective))
        contract.sku(sku, field: "\(field).sku", required: false)
        object.add("SKU", ifPresent: sku)
        names(field, description: description, displayName: displayName, required: false, &contract, into: &object)
        return object.json
    }
}

extension AdvancedCommerceItem {
    /// `SubscriptionMigrateItem` or `SubscriptionMigrateRenewalItem`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        itemMembers(field, sku: sku, description: description, displayName: displayName, price: nil, &contract).json
    }
}

extension AdvancedCommerceRefundItem {
    /// `RequestRefundItem`.
    func json(_ field: String, _ contract: inout RequestContract) -> AdvancedCommerceJSON {
        var object = AdvancedCommerceJSONObject()
        contract.sku(sku, field: "\(field).sku")
        object.add("SKU", .string(sku))
        contract.oneOf(refundReason, field: "\(field).refund_reason", allowed: RequestContract.refundReasons)
        object.add("refundReason", .string(refundReason))
        contract.oneOf(refundType, field: "\(field).refund_type", allowed: RequestContract.refundTypes)
        object.add("refundType", .string(refundType))
        object.add("revoke", .bool(revoke))
        if let amount = refundAmount {
            contract.milliunits(amount.value, field: "\(field).refund_amount")
            object.add("refundAmount", .integer(amount.value))
        }
        return object.json
    }
}

extension RequestContract {
    /// A list of Advanced Commerce items as a JSON array (each checked), at most `maxRepeatedValues`.
    mutating func itemArray<Element>(
        _ values: [Element], field: String, required: Bool,
        _ json: (Element, String, inout RequestContract) -> AdvancedCommerceJSON
    ) -> [AdvancedCommerceJSON] {
        list(values, field, required: required, &self, json)
    }
}
