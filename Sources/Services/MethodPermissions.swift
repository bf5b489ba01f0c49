import AppStoreDomain

/// The one permission each guarded RPC needs (`callers[].permissions`), by the method's path: every method of
/// every guarded service is listed here, and a test checks that each routed method is. A path not listed needs
/// every permission, so a method added without a line here is open only to callers that hold all four.
package enum MethodPermissions {
    /// The permission `method` (a gRPC path, `/package.Service/Method`) needs.
    package static func required(forMethod method: String) -> CallerPermissions {
        table[method] ?? .all
    }

    /// Every listed method path with its permission.
    package static let table: [String: CallerPermissions] = {
        var table: [String: CallerPermissions] = [:]
        func add(_ service: String, _ permission: CallerPermissions, _ methods: [String]) {
            for method in methods { table["/\(service)/\(method)"] = permission }
        }
        let gateway = AppStoreGatewayService.name
        add(
            gateway, .read,
            [
                "GetHistory", "StreamNotifications", "VerifyJWS", "GetTransactionInfo", "GetAllSubscriptionStatuses",
                "LookUpOrderId", "GetRefundHistory", "GetAppTransactionInfo",
                "GetStatusOfSubscriptionRenewalDateExtensions", "GetTestNotificationStatus",
                "ExtractTransactionIdFromReceipt",
            ])
        add(
            gateway, .write,
            [
                "SendConsumptionInformation", "ExtendSubscriptionRenewalDate",
                "ExtendRenewalDatesForAllActiveSubscribers", "RequestTestNotification", "SetAppAccountToken",
                "FinishTransaction",
            ])
        add(
            gateway, .sign,
            [
                "CreatePromotionalOfferSignature", "CreatePromotionalOfferV2Signature",
                "CreateIntroductoryOfferEligibilitySignature",
            ])
        add(gateway, .realtime, ["ServeRealtimeRequests"])
        let commerce = AdvancedCommerceService.name
        add(commerce, .sign, ["CreateInAppSignature"])
        add(
            commerce, .write,
            [
                "CancelSubscription", "RevokeSubscription", "ChangeSubscriptionPrice", "ChangeSubscriptionMetadata",
                "MigrateSubscription", "RequestRefund",
            ])
        // Every SubscriptionState RPC reads the state (the two that change it only apply what Apple signed).
        add(
            SubscriptionStateService.name, .read,
            [
                "GetSubscription", "GetCustomer", "ApplySignedTransaction", "RefreshSubscription",
                "WatchSubscriptionEvents",
            ])
        let retention = RetentionMessagingService.name
        add(
            retention, .read,
            ["GetImageList", "GetMessageList", "GetDefaultMessage", "GetRealtimeUrl", "GetPerformanceTestResults"])
        add(
            retention, .write,
            [
                "UploadImage", "DeleteImage", "UploadMessage", "DeleteMessage", "ConfigureDefaultMessage",
                "DeleteDefaultMessage", "ConfigureRealtimeUrl", "DeleteRealtimeUrl", "InitiatePerformanceTest",
            ])
        return table
    }()
}
