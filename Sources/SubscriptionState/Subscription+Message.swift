import ProtoCodec

extension Subscription {
    /// The contract's message for a stored record and its state at an instant.
    package init(_ record: SubscriptionRecord, app: String, state: DerivedSubscription, stale: Bool) {
        self.init()
        self.app = app
        environment = record.key.environment
        originalTransactionId = record.key.originalTransactionId
        subscriptionGroupIdentifier = state.subscriptionGroupIdentifier
        productId = state.productId
        status = state.status
        entitled = state.entitled
        entitlements = state.entitlements
        expiresDate = state.expiresDateMillis.map(ProtoTimestamp.init(unixMilliseconds:))
        gracePeriodExpiresDate = state.gracePeriodExpiresDateMillis.map(ProtoTimestamp.init(unixMilliseconds:))
        autoRenew = state.autoRenew
        autoRenewProductId = state.autoRenewProductId
        inBillingRetry = state.inBillingRetry
        revocationDate = state.revocationDateMillis.map(ProtoTimestamp.init(unixMilliseconds:))
        ownershipType = state.ownershipType
        appAccountToken = state.appAccountToken
        transaction = state.transaction?.payload
        renewalInfo = state.renewalInfo?.payload
        signedTransactionInfo = state.transaction?.jws ?? ""
        signedRenewalInfo = state.renewalInfo?.jws ?? ""
        transactionSignedDate = state.transactionSignedDateMillis.map(ProtoTimestamp.init(unixMilliseconds:))
        renewalSignedDate = state.renewalSignedDateMillis.map(ProtoTimestamp.init(unixMilliseconds:))
        version = record.version
        updatedAt = record.updatedAtMillis > 0 ? ProtoTimestamp(unixMilliseconds: record.updatedAtMillis) : nil
        source = SubscriptionSource(record.source)
        self.stale = stale
    }
}

extension SubscriptionSource {
    /// The contract's name of who brought a record's last change.
    package init(_ source: SnapshotSource?) {
        switch source {
        case .notification: self = .notification
        case .appleRead: self = .appleRead
        case .appPosted: self = .appPosted
        case nil: self = .unspecified
        }
    }
}

extension ProtoCodec.Entitlement {
    /// The contract's message for one of a customer's entitlements.
    package init(_ entitlement: EntitlementGrant) {
        self.init()
        name = entitlement.name
        active = entitlement.active
        expiresDate = entitlement.expiresDateMillis.map(ProtoTimestamp.init(unixMilliseconds:))
        originalTransactionIds = entitlement.originalTransactionIds
        productIds = entitlement.productIds
    }
}
