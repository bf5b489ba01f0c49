import ProtoCodec

extension SubscriptionRecord {
    /// What the record says at `nowMillis` (UNIX ms) under `policy`. Time is a parameter: the same record read at
    /// two instants may differ (a period ends, a grace period ends), and nothing else moves it.
    ///
    /// Apple's status, from the current transaction and the newest renewal info:
    /// revoked (5) when the current transaction has a `revocationDate`; active (1) before its `expiresDate`
    /// (a period ends at that instant); after it, billing grace period (4) while the renewal info says
    /// `isInBillingRetryPeriod` and `gracePeriodExpiresDate` is ahead, billing retry (3) while it says
    /// `isInBillingRetryPeriod`, else expired (2).
    package func state(at nowMillis: Int64, policy: SubscriptionPolicy) -> DerivedSubscription {
        let current = currentTransaction
        let transaction = current?.payload
        let renewal = renewalInfo?.payload
        let facets = facets(of: transaction, at: nowMillis, policy: policy)
        let tokenOfTransaction = transaction?.appAccountToken ?? ""
        return DerivedSubscription(
            key: key,
            status: facets.status,
            entitled: facets.entitled,
            entitlements: facets.entitled ? policy.entitlementNames(unlockedBy: transaction?.productId ?? "") : [],
            productId: transaction?.productId ?? "",
            subscriptionGroupIdentifier: transaction?.subscriptionGroupIdentifier ?? "",
            expiresDateMillis: transaction?.expiresAt,
            gracePeriodExpiresDateMillis: renewal?.gracePeriodEndsAt,
            autoRenew: renewal?.autoRenewStatus == .on,
            autoRenewProductId: renewal?.autoRenewProductId ?? "",
            inBillingRetry: renewal?.isInBillingRetryPeriod ?? false,
            revocationDateMillis: transaction?.revokedAt,
            ownershipType: transaction?.inAppOwnershipType ?? .unspecified,
            appAccountToken: tokenOfTransaction.isEmpty ? renewal?.appAccountToken ?? "" : tokenOfTransaction,
            transaction: current,
            renewalInfo: renewalInfo,
            transactionSignedDateMillis: current?.signedDateMillis,
            renewalSignedDateMillis: renewalInfo?.signedDateMillis,
            needsConfirmation: facets.needsConfirmation)
    }

    /// The first instant after `nowMillis` at which `state(at:policy:)` changes by time alone (its status, whether
    /// the customer is entitled, or whether it needs Apple's confirmation): the end of the period or of the grace
    /// period. Nil when no date ahead changes anything; a timer set for it needs no other wake-up until a
    /// snapshot arrives.
    package func nextTransitionMillis(at nowMillis: Int64, policy: SubscriptionPolicy) -> Int64? {
        let transaction = currentTransaction?.payload
        let now = facets(of: transaction, at: nowMillis, policy: policy)
        let instants = [transaction?.expiresAt, renewalInfo?.payload.gracePeriodEndsAt]
            .compactMap { $0 }.filter { $0 > nowMillis }.sorted()
        return instants.first { facets(of: transaction, at: $0, policy: policy) != now }
    }

    /// The parts of a state that time moves.
    private struct Facets: Equatable {
        var status: SubscriptionStatus
        var entitled: Bool
        var needsConfirmation: Bool
    }

    private func facets(of transaction: Transaction?, at now: Int64, policy: SubscriptionPolicy) -> Facets {
        guard let transaction else { return Facets(status: .unspecified, entitled: false, needsConfirmation: true) }
        let renewal = renewalInfo?.payload
        let expiresAt = transaction.expiresAt
        let periodOver = expiresAt.map { now >= $0 } ?? false
        let inBillingRetry = renewal?.isInBillingRetryPeriod ?? false
        let status: SubscriptionStatus
        if transaction.revokedAt != nil {
            status = .revoked
        } else if !periodOver {
            status = .active
        } else if inBillingRetry, let graceEnd = renewal?.gracePeriodEndsAt, now < graceEnd {
            status = .billingGracePeriod
        } else if inBillingRetry {
            status = .billingRetry
        } else {
            status = .expired
        }
        let entitled: Bool
        switch status {
        case .active, .billingGracePeriod: entitled = true
        case .revoked: entitled = policy.refundPolicy == .untilExpiry && expiresAt != nil && !periodOver
        default: entitled = false
        }
        let needsConfirmation =
            transaction.isUpgraded || (status == .expired && mayHaveRenewedUnseen(expiresAt: expiresAt ?? .min))
        return Facets(status: status, entitled: entitled, needsConfirmation: needsConfirmation)
    }

    /// After a period ended without a retry, whether a renewal may have happened that no snapshot shows: auto-renew
    /// was on (or no renewal info is known), Apple gave no reason for an expiry, and it signed nothing about the
    /// renewal since the period ended.
    private func mayHaveRenewedUnseen(expiresAt: Int64) -> Bool {
        guard let renewal = renewalInfo?.payload else { return true }
        return renewal.autoRenewStatus == .on && renewal.expirationIntent == .unspecified
            && (renewal.signedAt ?? .min) < expiresAt
    }
}
