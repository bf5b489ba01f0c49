import AppStoreDomain
import Foundation
import GatewayFoundation
import Testing

@testable import Simulator

@Suite struct GeneratedDataTests {
    static func transactions(_ dataset: SimulatedDataset) -> [SimulatedTransaction] {
        dataset.customers.flatMap(\.transactions)
    }

    @Test func sameSeedSameDataDifferentSeedDifferentData() {
        let a = SimulatorFixture(seed: 7).dataset
        let b = SimulatorFixture(seed: 7).dataset
        let c = SimulatorFixture(seed: 8).dataset
        #expect(a.customers == b.customers)
        #expect(a.customers != c.customers)
        let payloadA = Self.transactions(a).map { $0.payload(signedDate: 1).encodedText }
        let payloadB = Self.transactions(b).map { $0.payload(signedDate: 1).encodedText }
        #expect(payloadA == payloadB)
    }

    @Test func historiesCoverWhatRealAppsSee() {
        let fixture = SimulatorFixture(customers: 80)
        let all = Self.transactions(fixture.dataset)
        let renewals = fixture.dataset.customers.flatMap(\.renewals)
        let notifications = fixture.dataset.allNotifications
        #expect(Set(all.map(\.kind)) == Set(SimulatedProduct.Kind.allCases))
        #expect(
            all.contains { $0.productId.hasSuffix(".monthly") } && all.contains { $0.productId.hasSuffix(".yearly") })
        #expect(all.contains { $0.transactionReason == "RENEWAL" })
        #expect(all.contains { $0.isUpgraded })
        #expect(
            Set(all.compactMap(\.offerDiscountType)).isSuperset(of: ["FREE_TRIAL", "PAY_AS_YOU_GO", "PAY_UP_FRONT"]))
        #expect(Set(all.compactMap(\.offerType)) == [1, 2, 3])
        #expect(Set(all.compactMap(\.revocationType)) == ["REFUND_FULL", "REFUND_PRORATED", "FAMILY_REVOKE"])
        #expect(all.contains { $0.revocationType == "REFUND_PRORATED" && ($0.revocationPercentage ?? 0) < 100_000 })
        #expect(all.contains { $0.kind == .consumable && $0.quantity > 1 })
        #expect(all.contains { $0.inAppOwnershipType == "FAMILY_SHARED" })
        #expect(all.allSatisfy { $0.kind != .consumable || $0.inAppOwnershipType == "PURCHASED" })
        #expect(all.allSatisfy { ($0.expiresDate != nil) == ($0.kind == .autoRenewable) })
        #expect(Set(renewals.map(\.status)) == [1, 2, 3, 4, 5])
        #expect(renewals.contains { $0.autoRenewProductId != $0.productId })
        #expect(renewals.contains { $0.gracePeriodExpiresDate != nil })
        let types = Set(notifications.map(\.notificationType))
        #expect(
            types.isSuperset(of: [
                "SUBSCRIBED", "DID_RENEW", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "EXPIRED",
                "DID_FAIL_TO_RENEW", "REFUND", "REVOKE", "OFFER_REDEEMED", "CONSUMPTION_REQUEST", "ONE_TIME_CHARGE",
            ]))
        let results = Set(notifications.flatMap(\.sendAttempts).map(\.result))
        #expect(results.contains("SUCCESS") && results.count >= 4)
        let now = SimulatorFixture.referenceTime.millisecondsSince1970
        #expect(all.allSatisfy { $0.purchaseDate <= now && $0.modifiedDate <= now })
        #expect(notifications.allSatisfy { $0.sendAttempts.allSatisfy { $0.attemptDate <= now } })
        // Every transaction id is unique and numeric, and environments never share one.
        #expect(Set(all.map(\.transactionId)).count == all.count)
        let sandbox = fixture.simulator.dataset(bundleId: fixture.app.bundleId, environment: .sandbox)
        let sandboxTransactions = sandbox.map { Self.transactions($0) } ?? []
        let sandboxIds = Set(sandboxTransactions.map(\.transactionId))
        #expect(!sandboxIds.isEmpty && sandboxIds.isDisjoint(with: all.map(\.transactionId)))
        #expect(sandboxTransactions.allSatisfy { $0.environment == .sandbox })
    }

    @Test func subscriptionPeriodsChainWithoutGaps() {
        let fixture = SimulatorFixture(customers: 30)
        for customer in fixture.dataset.customers {
            let byOriginal = Dictionary(grouping: customer.transactions.filter { $0.kind == .autoRenewable }) {
                $0.originalTransactionId
            }
            for (_, chain) in byOriginal {
                let sorted = chain.sorted { $0.purchaseDate < $1.purchaseDate }
                for (previous, next) in zip(sorted, sorted.dropFirst()) {
                    let end = previous.isUpgraded ? previous.modifiedDate : (previous.expiresDate ?? 0)
                    #expect(next.purchaseDate == end)
                    #expect(next.originalPurchaseDate == sorted[0].purchaseDate)
                }
            }
        }
    }
}
