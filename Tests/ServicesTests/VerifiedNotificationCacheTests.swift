import GatewayFoundation
import ProtoCodec
import SignedData
import Testing

@testable import Services

/// The followers' shared cache of verified stored notifications: keyed by payload and requirements,
/// short-lived, bounded.
@Suite struct VerifiedNotificationCacheTests {
    private func notification(_ uuid: String) -> AppStoreNotification {
        var notification = AppStoreNotification()
        notification.notificationUuid = uuid
        return notification
    }

    @Test func aPayloadVerifiedForOneAppOrEnvironmentIsNotServedForAnother() throws {
        let cache = VerifiedNotificationCache()
        let now = MonotonicInstant(nanoseconds: 0)
        let sandbox = try VerificationRequirements(bundleID: "com.a", appAppleID: 1, environment: .sandbox)
        let key = VerifiedNotificationCache.key(payload: "x.y.z", requirements: sandbox)
        cache.remember(notification("n"), for: key, now: now)
        #expect(cache.notification(for: key, now: now)?.notificationUuid == "n")
        for other in [
            try VerificationRequirements(bundleID: "com.b", appAppleID: 1, environment: .sandbox),
            try VerificationRequirements(bundleID: "com.a", appAppleID: 2, environment: .sandbox),
            try VerificationRequirements(bundleID: "com.a", appAppleID: 1, environment: .production),
        ] {
            #expect(
                cache.notification(for: VerifiedNotificationCache.key(payload: "x.y.z", requirements: other), now: now)
                    == nil)
        }
        #expect(
            cache.notification(for: VerifiedNotificationCache.key(payload: "x.y.Z", requirements: sandbox), now: now)
                == nil)
    }

    @Test func anEntryExpiresAfterItsLifetimeAndTheCacheStaysBounded() throws {
        let cache = VerifiedNotificationCache()
        let start = MonotonicInstant(nanoseconds: 0)
        let requirements = try VerificationRequirements(bundleID: "com.a", appAppleID: 1, environment: .sandbox)
        let key = VerifiedNotificationCache.key(payload: "p", requirements: requirements)
        cache.remember(notification("n"), for: key, now: start)
        #expect(cache.notification(for: key, now: start + .seconds(59)) != nil)
        #expect(cache.notification(for: key, now: start + VerifiedNotificationCache.lifetime) == nil)
        for index in 0..<(VerifiedNotificationCache.capacity + 10) {
            cache.remember(
                notification("\(index)"),
                for: VerifiedNotificationCache.key(payload: "p\(index)", requirements: requirements), now: start)
        }
        #expect(cache.count <= VerifiedNotificationCache.capacity)
    }
}
