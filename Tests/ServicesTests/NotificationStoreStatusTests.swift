import AppStoreDomain
import GRPC
import Services
import Testing

/// A followed stream whose notification store fails ends UNAVAILABLE, so the caller resumes later.
@Suite struct NotificationStoreStatusTests {
    @Test func aStoreFailureIsUnavailableWithItsReason() {
        let status = GatewayError.notificationStoreUnavailable("disk I/O error").rpcStatus
        #expect(status.code == .unavailable)
        #expect(status.message.contains("disk I/O error"))
        #expect(status.details?.info?.reason == "NOTIFICATION_STORE_UNAVAILABLE")
    }
}
