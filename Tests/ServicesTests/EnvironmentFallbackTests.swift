import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Foundation
import GatewayFoundation
import HTTPServer
import NotificationStore
import ProtoCodec
import SignedData
import Testing

@testable import Services

/// `auto` apps: GetHistory pages after the first go straight to the environment that answered; Apple's own
/// answer fills the response's app id and environment.
@Suite(.serialized) struct EnvironmentFallbackTests {
    @Test func laterPagesAskTheEnvironmentThatAnswered() async throws {
        let mint = try TransactionMint()
        let sandbox = try mint.jws("1", environment: "Sandbox")
        let fixture = try UpstreamFixture(apps: [
            UpstreamFixture.app("example", bundleId: "com.example.app", environment: .auto)
        ]) {
            request, _ in
            request.path.hasPrefix("/production")
                ? AppleJSON.error(4_040_010, status: 404)
                : AppleJSON.history(
                    [sandbox], revision: "rev-\(request.path.count)", hasMore: true, environment: "Sandbox",
                    appAppleId: 0)
        }
        let handler = GetHistoryHandler(
            client: fixture.client, verifier: mint.verifier, maxPages: 5, clock: SystemClock())
        var request = GetHistoryRequest()
        request.transactionId = "2000000123"
        let first = try await handler.handle(request, remaining: .seconds(5))
        #expect(first.environment == .sandbox && first.appAppleId == 0)  // Apple's 0, not the configured 1234
        #expect(fixture.fake.requests.map(\.path).map { $0.hasPrefix("/production") } == [true, false])

        request.revision = first.revision
        let second = try await handler.handle(request, remaining: .seconds(5))
        #expect(second.environment == .sandbox)
        // Only sandbox was asked for the second page.
        #expect(fixture.fake.requests.count == 3)
        #expect(fixture.fake.requests.last?.path.hasPrefix("/sandbox") == true)

        // An unknown revision (another replica's, or a stored one) falls back as before.
        request.revision = "stored-elsewhere"
        _ = try await handler.handle(request, remaining: .seconds(5))
        #expect(fixture.fake.requests.suffix(2).map { $0.path.hasPrefix("/production") } == [true, false])
    }

    @Test func streamsOfAutoAppsFallBackOnlyWhereSandboxCanAnswer() throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture(apps: [
            UpstreamFixture.app("example", bundleId: "com.example.app", environment: .auto)
        ])
        let handler = StreamNotificationsHandler(
            client: fixture.client, verifier: mint.verifier,
            resumeTokenKeys: ResumeTokenKeyRing(keys: [Array(repeating: 1, count: 32)]),
            resumeTokenMaxAge: .seconds(60),
            clock: SystemClock())
        let now = Int64(Date().timeIntervalSince1970)
        func plan(daysBack: Int64, transactionID: String = "", environment: Environment = .unspecified) throws
            -> StreamNotificationsHandler.Plan
        {
            var request = StreamNotificationsRequest()
            request.startDate = ProtoTimestamp(seconds: now - daysBack * 86_400, nanos: 0)
            request.endDate = ProtoTimestamp(seconds: now, nanos: 0)
            request.transactionId = transactionID
            request.environment = environment
            return try handler.prepare(request)
        }
        // No transaction id: Apple answers production's history and never 4040010, so production it is.
        #expect(try plan(daysBack: 10).pagingEnvironment == .production)
        // A transaction id inside sandbox's 30-day window: production, then sandbox on 4040010.
        #expect(try plan(daysBack: 10, transactionID: "2000000123").pagingEnvironment == nil)
        // Outside it sandbox would refuse the dates: production only.
        #expect(try plan(daysBack: 90, transactionID: "2000000123").pagingEnvironment == .production)
        // An explicit environment is kept.
        #expect(try plan(daysBack: 10, environment: .sandbox).pagingEnvironment == .sandbox)
    }

    @Test func aFollowedStreamKeepsStrictVerificationAndThePagingEnvironment() throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture(apps: [
            UpstreamFixture.app("example", bundleId: "com.example.app", environment: .auto)
        ])
        let directory = NSTemporaryDirectory() + "follow-plan-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var handler = StreamNotificationsHandler(
            client: fixture.client, verifier: mint.verifier,
            resumeTokenKeys: ResumeTokenKeyRing(keys: [Array(repeating: 1, count: 32)]),
            resumeTokenMaxAge: .seconds(60),
            clock: SystemClock())
        handler.live = LiveNotificationFeed(
            store: try SQLiteNotificationStore(path: directory + "/notifications.db"),
            metrics: NotificationMetrics(registry: nil))
        var request = StreamNotificationsRequest()
        request.startDate = ProtoTimestamp(seconds: Int64(Date().timeIntervalSince1970) - 10 * 86_400, nanos: 0)
        request.strictVerification = true
        request.follow = true
        let follow = try handler.prepareFollow(request)
        #expect(follow.plan.strictVerification)
        // No transaction id: production's history only, as for the same stream without follow.
        #expect(follow.plan.pagingEnvironment == .production)
    }

    @Test func theMemoIsBounded() {
        let memo = RevisionEnvironments(capacity: 3)
        for index in 0..<10 { memo.remember(.sandbox, bundleID: "b", revision: "r\(index)") }
        #expect(memo.count == 3)
        #expect(memo.environment(bundleID: "b", revision: "r9") == .sandbox)
        #expect(memo.environment(bundleID: "b", revision: "r0") == nil)
        #expect(memo.environment(bundleID: "other", revision: "r9") == nil)
        memo.remember(.production, bundleID: "b", revision: "")
        #expect(memo.environment(bundleID: "b", revision: "") == nil)
    }
}
