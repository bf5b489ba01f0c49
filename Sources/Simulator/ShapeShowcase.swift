import AppStoreDomain

/// Every shape Apple sends, at least once, in customer 0's history (deterministic for a seed): a 12-month
/// commitment plan billed monthly with commitment info and Advanced Commerce info, its renewal info with a
/// pending price increase, a win-back offer and win-back offer ids, an offer code redeemed on a consumable
/// (`ONE_TIME`), and a notification of every type and subtype in Apple's enums, including the payloads that
/// are not `data`: a mass-extension `summary`, external purchase tokens, and `appData` with a signed app
/// transaction. Dates lie within the last two days, inside every retention window.
extension HistoryGenerator {
    /// Apple's notification types with each subtype they come with (nil: none).
    static let notificationShapes: [(type: String, subtype: String?)] = [
        ("SUBSCRIBED", "INITIAL_BUY"), ("SUBSCRIBED", "RESUBSCRIBE"),
        ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"), ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"),
        ("DID_CHANGE_RENEWAL_PREF", nil),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"), ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"),
        ("OFFER_REDEEMED", "INITIAL_BUY"), ("OFFER_REDEEMED", "RESUBSCRIBE"), ("OFFER_REDEEMED", "UPGRADE"),
        ("OFFER_REDEEMED", "DOWNGRADE"), ("OFFER_REDEEMED", nil),
        ("DID_RENEW", nil), ("DID_RENEW", "BILLING_RECOVERY"),
        ("EXPIRED", "VOLUNTARY"), ("EXPIRED", "BILLING_RETRY"), ("EXPIRED", "PRICE_INCREASE"),
        ("EXPIRED", "PRODUCT_NOT_FOR_SALE"),
        ("DID_FAIL_TO_RENEW", nil), ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"), ("GRACE_PERIOD_EXPIRED", nil),
        ("PRICE_INCREASE", "PENDING"), ("PRICE_INCREASE", "ACCEPTED"),
        ("REFUND", nil), ("REFUND_DECLINED", nil), ("REFUND_REVERSED", nil), ("REVOKE", nil),
        ("RENEWAL_EXTENDED", nil), ("RENEWAL_EXTENSION", "FAILURE"),
        ("METADATA_UPDATE", nil), ("MIGRATION", nil), ("PRICE_CHANGE", nil), ("TEST", nil),
    ]

    /// Apple's consumptionRequestReason values, one CONSUMPTION_REQUEST each.
    static let consumptionReasons = [
        "UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER",
    ]

    mutating func showcase(random: inout DeterministicRandom, context: inout PurchaseContext) {
        guard let news = catalog.products.first(where: { $0.subscriptionGroupIdentifier == catalog.newsGroup }),
            let coins = catalog.product("\(bundleId).coins.100")
        else { return }
        let start = referenceTime - 2 * Self.day
        var at = start
        func next() -> Int64 {
            at += 15 * 60_000
            return at
        }

        // A commitment plan bought through the Advanced Commerce API.
        var plan = makeTransaction(
            product: news, purchaseDate: start, originalPurchaseDate: start - 60 * Self.day,
            originalTransactionId: nil, reason: "RENEWAL", context: context)
        plan.expiresDate = start + periodLength(months: 1)
        plan.billingPlanType = "MONTHLY"
        plan.commitmentInfo = .object([
            ("billingPeriodNumber", .integer(3)), ("commitmentExpiresDate", .integer(start + 300 * Self.day)),
            ("commitmentPrice", .integer(plan.price * 12)), ("totalBillingPeriods", .integer(12)),
        ])
        plan.advancedCommerceInfo = Self.advancedCommerceTransaction(sku: news.productId, price: plan.price, at: start)
        context.transactions.append(plan)
        var renewal = SimulatedRenewalInfo(
            originalTransactionId: plan.originalTransactionId, subscriptionGroupIdentifier: catalog.newsGroup,
            productId: news.productId, autoRenewProductId: news.productId, autoRenewStatus: 1, expirationIntent: nil,
            isInBillingRetryPeriod: false, gracePeriodExpiresDate: nil, offerType: 4,
            offerIdentifier: "\(bundleId).winback.news", offerDiscountType: "PAY_AS_YOU_GO", environment: environment,
            recentSubscriptionStartDate: start - 60 * Self.day, renewalDate: plan.expiresDate,
            renewalPrice: plan.price + plan.price / 10, currency: plan.currency,
            appAccountToken: context.appAccountToken,
            appTransactionId: context.appTransactionId, status: 1)
        renewal.priceIncreaseStatus = 0
        renewal.eligibleWinBackOfferIds = ["\(bundleId).winback.news", "\(bundleId).winback.any"]
        renewal.offerPeriod = "P1M"
        renewal.renewalBillingPlanType = "MONTHLY"
        renewal.commitmentInfo = .object([
            ("commitmentAutoRenewProductId", .string(news.productId)), ("commitmentAutoRenewStatus", .integer(1)),
            ("commitmentRenewalBillingPlanType", .string("BILLED_UPFRONT")),
            ("commitmentRenewalDate", .integer(start + 300 * Self.day)),
            ("commitmentRenewalPrice", .integer(plan.price * 11)),
        ])
        renewal.advancedCommerceInfo = Self.advancedCommerceRenewal(sku: news.productId, price: plan.price)
        context.renewals.append(renewal)

        // An offer code redeemed on a consumable.
        var redeemed = makeTransaction(
            product: coins, purchaseDate: start + Self.hour, originalPurchaseDate: start + Self.hour,
            originalTransactionId: nil, reason: "PURCHASE", context: context)
        redeemed.offerType = 3
        redeemed.offerIdentifier = "COINS-CODE-2026"
        redeemed.offerDiscountType = "ONE_TIME"
        redeemed.price /= 2
        redeemed.isFinished = false
        context.transactions.append(redeemed)

        for (type, subtype) in Self.notificationShapes {
            var entry = notification(type, subtype, at: next(), plan, random: &random)
            if type == "TEST" {
                entry.transactionId = nil
                entry.originalTransactionId = nil
            }
            context.notifications.append(entry)
        }
        context.notifications.append(notification("ONE_TIME_CHARGE", nil, at: next(), redeemed, random: &random))
        for reason in Self.consumptionReasons {
            var entry = notification("CONSUMPTION_REQUEST", nil, at: next(), redeemed, random: &random)
            entry.consumptionRequestReason = reason
            context.notifications.append(entry)
        }
        var summary = notification("RENEWAL_EXTENSION", "SUMMARY", at: next(), plan, random: &random)
        summary.otherPayload = .summary(
            .object([
                ("productId", .string(news.productId)), ("requestIdentifier", .string(random.uuid())),
                ("storefrontCountryCodes", .array(["USA", "FRA", "JPN"].map(OrderedJSON.string))),
                ("succeededCount", .integer(Int64(random.int(100...999)))),
                ("failedCount", .integer(Int64(random.int(0...9)))),
            ]))
        context.notifications.append(summary)
        for (subtype, tokenType) in [
            ("UNREPORTED", "ACQUISITION"), ("CREATED", "SERVICES"), ("ACTIVE_TOKEN_REMINDER", nil),
        ] {
            var token = notification("EXTERNAL_PURCHASE_TOKEN", subtype, at: next(), plan, random: &random)
            var fields: [(String, OrderedJSON)] = [
                // Apple marks sandbox tokens by the id's prefix.
                ("externalPurchaseId", .string((environment == .sandbox ? "SANDBOX_" : "") + random.uuid())),
                ("tokenCreationDate", .integer(at - Self.day)),
            ]
            if let tokenType {
                fields += [("tokenType", .string(tokenType)), ("tokenExpirationDate", .integer(at + 30 * Self.day))]
            }
            token.otherPayload = .externalPurchaseToken(.object(fields))
            context.notifications.append(token)
        }
        var rescind = notification("RESCIND_CONSENT", nil, at: next(), plan, random: &random)
        rescind.otherPayload = .appData(
            appTransaction: .object([
                ("applicationVersion", .string("3.2")),
                ("versionExternalIdentifier", .integer(Int64(random.int(1_000...9_999)))),
                ("receiptCreationDate", .integer(at)), ("originalPurchaseDate", .integer(start - 400 * Self.day)),
                ("originalApplicationVersion", .string("1.0")), ("deviceVerification", .string(random.uuid())),
                ("deviceVerificationNonce", .string(random.uuid())),
                ("appTransactionId", .string(context.appTransactionId)),
                ("originalPlatform", .string("iOS")),
            ]))
        context.notifications.append(rescind)
    }

    static func advancedCommerceTransaction(sku: String, price: Int64, at date: Int64) -> OrderedJSON {
        .object([
            ("descriptors", .object([("description", .string("News, every day")), ("displayName", .string("News"))])),
            ("estimatedTax", .integer(price / 10)),
            (
                "items",
                .array([
                    .object([
                        ("SKU", .string(sku)), ("description", .string("News, every day")),
                        ("displayName", .string("News")),
                        (
                            "offer",
                            .object([
                                ("period", .string("P1M")), ("periodCount", .integer(3)),
                                ("price", .integer(price / 2)),
                                ("reason", .string("ACQUISITION")),
                            ])
                        ),
                        ("price", .integer(price)),
                        (
                            "refunds",
                            .array([
                                .object([
                                    ("refundAmount", .integer(price / 4)), ("refundDate", .integer(date + 60_000)),
                                    ("refundReason", .string("UNSATISFIED_WITH_PURCHASE")),
                                    ("refundType", .string("CUSTOM")),
                                ])
                            ])
                        ),
                    ])
                ])
            ),
            ("period", .string("P1M")), ("requestReferenceId", .string("5d3c5f28-8b7b-4c3b-9f1a-0e2d4b6a8c10")),
            ("taxCode", .string("C003-00-2")), ("taxExclusivePrice", .integer(price - price / 10)),
            ("taxRate", .string("0.1")),
        ])
    }

    static func advancedCommerceRenewal(sku: String, price: Int64) -> OrderedJSON {
        .object([
            ("consistencyToken", .string("ct-\(sku)")),
            ("descriptors", .object([("description", .string("News, every day")), ("displayName", .string("News"))])),
            (
                "items",
                .array([
                    .object([
                        ("SKU", .string(sku)), ("description", .string("News, every day")),
                        ("displayName", .string("News")),
                        ("price", .integer(price)),
                        (
                            "priceIncreaseInfo",
                            .object([
                                ("dependentSKUs", .array([.string(sku)])),
                                ("price", .integer(price + price / 10)), ("status", .string("PENDING")),
                            ])
                        ),
                    ])
                ])
            ),
            ("period", .string("P1M")), ("requestReferenceId", .string("0f6a2b1c-3d4e-4f50-8a9b-0c1d2e3f4a5b")),
            ("taxCode", .string("C003-00-2")),
        ])
    }
}
