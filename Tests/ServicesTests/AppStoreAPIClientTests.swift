import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Configuration
import Cryptography
import Foundation
import GRPC
import GatewayFoundation
import HTTPServer
import Metrics
import Services
import Testing

@Suite(.serialized) struct AppStoreAPIClientTests {
    private func history(
        _ fixture: UpstreamFixture, app: String = "example", query: TransactionHistoryQuery = .init(),
        environment: AppleEnvironment? = nil, deadline: MonotonicInstant? = nil
    ) async throws(GatewayError) -> TransactionHistoryPage {
        try await fixture.client.transactionHistory(
            transactionID: "2000000123", query: query, app: try fixture.app(app), environment: environment,
            deadline: deadline)
    }

    @Test func everyFilterIsEncodedAsAppleExpects() async throws {
        let fixture = try UpstreamFixture()
        let query = TransactionHistoryQuery(
            revision: "rev/1+x", startDate: 1_700_000_000_000, endDate: 1_800_000_000_000, productIds: ["a.b", "c d"],
            productTypes: [.consumable, .autoRenewable], sort: .descending, subscriptionGroupIdentifiers: ["g1", "g2"],
            inAppOwnershipType: .familyShared, revoked: false)
        _ = try await history(fixture, query: query)
        let request = try #require(fixture.fake.requests.first)
        #expect(request.method == "GET")
        #expect(request.path == "/production/inApps/v2/history/2000000123")
        let items = request.queryItems.map { "\($0.name)=\($0.value)" }
        #expect(
            items == [
                "revision=rev/1+x", "startDate=1700000000000", "endDate=1800000000000", "productId=a.b",
                "productId=c d",
                "productType=CONSUMABLE", "productType=AUTO_RENEWABLE", "sort=DESCENDING",
                "subscriptionGroupIdentifier=g1",
                "subscriptionGroupIdentifier=g2", "inAppOwnershipType=FAMILY_SHARED", "revoked=false",
            ])
        #expect(request.header("accept") == "application/json")
    }

    @Test func theJWTVerifiesWithTheAppKeyAndCarriesAppleClaims() async throws {
        let fixture = try UpstreamFixture()
        let before = Date().timeIntervalSince1970
        for _ in 0..<3 { _ = try await history(fixture) }
        let tokens = fixture.fake.requests.compactMap { $0.header("authorization") }
        #expect(tokens.count == 3)
        #expect(Set(tokens).count == 1, "one JWT reused until its refresh time")
        let bearer = try #require(tokens.first)
        #expect(bearer.hasPrefix("Bearer "))
        let parts = bearer.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        func object(_ part: Substring) throws -> [String: Any] {
            let bytes = try #require(Base64.decode(part, variant: .urlSafeUnpadded))
            return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        }
        let header = try object(parts[0])
        let claims = try object(parts[1])
        let app = try fixture.app()
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == app.keyId)
        #expect(header["typ"] as? String == "JWT")
        #expect(claims["iss"] as? String == app.issuerId)
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == app.bundleId)
        let iat = try #require(claims["iat"] as? Int)
        let exp = try #require(claims["exp"] as? Int)
        #expect(Double(iat) <= before + 1 && Double(iat) >= before - 120)
        #expect(exp > iat && exp - iat <= 3600)
        // Independent check: OpenSSL verification with the app's public key, not the signing code path.
        let signature = try #require(Base64.decode(parts[2], variant: .urlSafeUnpadded))
        #expect(signature.count == 64)
        let publicKey = try #require(fixture.keys[app.bundleId]).publicKey
        #expect(publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        #expect(!publicKey.isValidSignature(signature, for: Array("\(parts[0]).e30".utf8)))
    }

    @Test func theJWTIsReMintedAfterItsRefreshTime() async throws {
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: Int64(Date().timeIntervalSince1970 * 1000)))
        let fixture = try UpstreamFixture(clock: clock)
        _ = try await history(fixture)
        clock.advance(by: .seconds(10 * 60))
        _ = try await history(fixture)
        clock.advance(by: .seconds(5 * 60))  // 15 min: past the refresh point (20 min lifetime - 5 min margin)
        _ = try await history(fixture)
        let tokens = fixture.fake.requests.compactMap { $0.header("authorization") }
        #expect(tokens[0] == tokens[1])
        #expect(tokens[1] != tokens[2])
    }

    @Test func bucketsHoldUnder200ConcurrentCallsAndStayPerApp() async throws {
        let tight = RateLimits(overrides: [.getTransactionHistory: EndpointRate(perSecond: 1, burst: 10)])
        let events = BucketEvents()
        let fixture = try UpstreamFixture(
            apps: [UpstreamFixture.app("busy", rateLimits: tight), UpstreamFixture.app("quiet", rateLimits: tight)],
            maxWait: .zero, metrics: events.metrics)
        let outcomes = await withTaskGroup(of: GatewayError?.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    await gatewayError { () throws(GatewayError) in try await history(fixture, app: "busy") }
                }
            }
            return await group.reduce(into: [GatewayError?]()) { $0.append($1) }
        }
        let admitted = outcomes.filter { $0 == nil }.count
        let refused = outcomes.compactMap { $0 }.filter {
            if case .rateLimited(let refusal) = $0 { return refusal.source == .localBucket && refusal.app == "busy" }
            return false
        }
        #expect(admitted >= 10 && admitted <= 11, "burst 10 at 1/s: admitted \(admitted)")
        #expect(refused.count == 200 - admitted)
        #expect(refused.first?.rpcStatus.code == .resourceExhausted)
        #expect(refused.first?.rpcStatus.details?.retryDelayMilliseconds != nil)
        #expect(fixture.fake.requests.count == admitted)
        #expect(events.refusals == ["busy/getTransactionHistory/production": 200 - admitted])
        // Another app's budget is untouched.
        for _ in 0..<10 { _ = try await history(fixture, app: "quiet") }
    }

    @Test func queuedCallersWaitForTheirSlotWithinMaxWait() async throws {
        let limits = RateLimits(overrides: [.getTransactionHistory: EndpointRate(perSecond: 20, burst: 1)])
        let events = BucketEvents()
        let fixture = try UpstreamFixture(
            apps: [UpstreamFixture.app("example", rateLimits: limits)], maxWait: .seconds(1), metrics: events.metrics)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<5 { group.addTask { _ = try await history(fixture) } }
            try await group.waitForAll()
        }
        // Five calls at 20/s with a burst of 1: the last one waits about 200 ms.
        #expect(ContinuousClock.now - started >= .milliseconds(180))
        #expect(fixture.fake.requests.count == 5)
        // The four queued calls are reported as waits, about 50 + 100 + 150 + 200 ms in all.
        #expect(events.waits == 4)
        #expect(events.waitedSeconds > 0.4)
    }

    @Test func apple429BlocksEveryCallerUntilRetryAfter() async throws {
        let fixture = try UpstreamFixture(maxWait: .milliseconds(500)) { _, _ in
            let until = Int64(Date().timeIntervalSince1970 * 1000) + 3_000
            return AppleJSON.error(4_290_000, status: 429, headers: [("retry-after", String(until))])
        }
        let first = await gatewayError { () throws(GatewayError) in try await history(fixture) }
        guard case .rateLimited(let refusal)? = first, case .apple = refusal.source else {
            Issue.record("expected Apple's rate limit, got \(String(describing: first))")
            return
        }
        #expect(refusal.retryAfter > .seconds(2) && refusal.retryAfter <= .seconds(3))
        #expect(first?.rpcStatus.code == .resourceExhausted)
        let others = await withTaskGroup(of: GatewayError?.self) { group in
            for _ in 0..<20 {
                group.addTask { await gatewayError { () throws(GatewayError) in try await history(fixture) } }
            }
            return await group.reduce(into: [GatewayError?]()) { $0.append($1) }
        }
        for error in others {
            guard case .rateLimited(let local)? = error else {
                Issue.record("expected a local refusal, got \(String(describing: error))")
                continue
            }
            #expect(local.source == .localBucket)
            #expect(local.retryAfter > .seconds(2))
        }
        #expect(fixture.fake.requests.count == 1, "no request reaches Apple while blocked")
    }

    @Test func retryableAnswersAreRetriedUntilSuccess() async throws {
        let fixture = try UpstreamFixture { _, number in
            switch number {
            case 1: AppleJSON.error(5_000_001, status: 500)
            case 2: HTTPResponse(status: 503)
            default: AppleJSON.history([])
            }
        }
        _ = try await history(fixture)
        #expect(fixture.fake.requests.count == 3)
    }

    @Test func generalInternalIsRetriedLikeItsRetryableSibling() async throws {
        let fixture = try UpstreamFixture { _, number in
            number == 1 ? AppleJSON.error(5_000_000, status: 500) : AppleJSON.history([])
        }
        _ = try await history(fixture)
        #expect(fixture.fake.requests.count == 2)
    }

    @Test func generalInternalEndsUnavailableWhenItPersists() async throws {
        let fixture = try UpstreamFixture { _, _ in AppleJSON.error(5_000_000, status: 500) }
        let error = await gatewayError { () throws(GatewayError) in try await history(fixture) }
        #expect(error?.rpcStatus.code == .unavailable)
        #expect(fixture.fake.requests.count == 3)
    }

    @Test func connectionResetsAreRetried() async throws {
        let fixture = try UpstreamFixture { _, number in
            number == 1 ? HTTPResponse(status: 200, delivery: .resetConnection) : AppleJSON.history([])
        }
        _ = try await history(fixture)
        #expect(fixture.fake.requests.count == 2)
    }

    @Test func retriesStopAtMaxAttemptsAsUnavailable() async throws {
        let fixture = try UpstreamFixture { _, _ in AppleJSON.error(4_040_002, status: 404) }
        let error = await gatewayError { () throws(GatewayError) in try await history(fixture) }
        guard case .upstreamUnavailable(let outage)? = error else {
            Issue.record("expected UNAVAILABLE, got \(String(describing: error))")
            return
        }
        #expect(outage.attempts == 3)
        #expect(outage.lastAppleCode == AppleErrorCode(rawValue: 4_040_002))
        #expect(outage.appleRequestID?.hasPrefix("req-") == true)
        #expect(error?.rpcStatus.code == .unavailable)
        #expect(fixture.fake.requests.count == 3)
    }

    @Test(arguments: [(Int64(4_000_006), 400, StatusCode.invalidArgument), (4_040_001, 404, .notFound)])
    func finalAnswersAreNotRetried(code: Int64, http: Int, status: StatusCode) async throws {
        let fixture = try UpstreamFixture { _, _ in AppleJSON.error(code, status: http) }
        let error = await gatewayError { () throws(GatewayError) in try await history(fixture) }
        #expect(error?.rpcStatus.code == status)
        #expect(error?.rpcStatus.details?.info?.metadata["apple_error_code"] == String(code))
        #expect(error?.rpcStatus.details?.info?.metadata["apple_request_id"]?.hasPrefix("req-") == true)
        #expect(fixture.fake.requests.count == 1)
    }

    @Test func autoFallsBackToSandboxOn4040010() async throws {
        let fixture = try UpstreamFixture(apps: [
            UpstreamFixture.app("example", bundleId: "com.example.app", environment: .auto)
        ]) {
            request, _ in
            request.path.hasPrefix("/production")
                ? AppleJSON.error(4_040_010, status: 404) : AppleJSON.history([], environment: "Sandbox")
        }
        let page = try await history(fixture)
        #expect(page.environment == .sandbox)
        #expect(fixture.fake.requests.map { $0.path.split(separator: "/").first ?? "" } == ["production", "sandbox"])
    }

    @Test func notFoundEverywhereNamesTheEnvironmentsTried() async throws {
        let fixture = try UpstreamFixture(apps: [
            UpstreamFixture.app("example", bundleId: "com.example.app", environment: .auto)
        ]) {
            _, _ in AppleJSON.error(4_040_010, status: 404)
        }
        let error = await gatewayError { () throws(GatewayError) in try await history(fixture) }
        #expect(error?.rpcStatus.code == .notFound)
        #expect(error?.rpcStatus.details?.info?.metadata["environments_tried"] == "production,sandbox")
        // An explicit environment is the only one tried.
        let sandboxOnly = await gatewayError { () throws(GatewayError) in
            try await history(fixture, environment: .sandbox)
        }
        #expect(sandboxOnly?.rpcStatus.details?.info?.metadata["environments_tried"] == "sandbox")
    }

    @Test func unauthorizedFallsBackOnlyWhenConfigured() async throws {
        for fallback in [false, true] {
            let fixture = try UpstreamFixture(
                apps: [
                    UpstreamFixture.app(
                        "example", bundleId: "com.example.app", environment: .auto, fallbackOn401: fallback)
                ]
            ) { request, _ in
                request.path.hasPrefix("/production")
                    ? HTTPResponse(status: 401) : AppleJSON.history([], environment: "Sandbox")
            }
            let result = await gatewayError { () throws(GatewayError) in try await history(fixture) }
            if fallback {
                #expect(result == nil)
                #expect(fixture.fake.requests.count == 3, "401, re-minted 401, then sandbox")
            } else {
                #expect(result?.rpcStatus.code == .failedPrecondition)
                #expect(fixture.fake.requests.count == 2)
            }
        }
    }

    @Test func a401ReMintsTheJWTOnce() async throws {
        let fixture = try UpstreamFixture { _, number in number == 1 ? HTTPResponse(status: 401) : AppleJSON.history([])
        }
        _ = try await history(fixture)
        let tokens = fixture.fake.requests.compactMap { $0.header("authorization") }
        #expect(tokens.count == 2)
        #expect(tokens[0] != tokens[1])
        // The new token is the cached one from now on.
        _ = try await history(fixture)
        #expect(fixture.fake.requests.last?.header("authorization") == tokens[1])
    }

    @Test func theDeadlineHoldsWhileAppleIsSlow() async throws {
        let fixture = try UpstreamFixture { _, _ in
            try? await Task.sleep(for: .seconds(3))
            return AppleJSON.history([])
        }
        let started = ContinuousClock.now
        let error = await gatewayError { () throws(GatewayError) in
            try await history(fixture, deadline: deadline(in: .milliseconds(600)))
        }
        #expect(ContinuousClock.now - started < .milliseconds(900))
        #expect(error?.rpcStatus.code == .deadlineExceeded)
    }

    @Test func aSlowBodyWithinTheDeadlineSucceeds() async throws {
        let body = AppleJSON.history([]).body
        let fixture = try UpstreamFixture { _, _ in
            HTTPResponse(
                status: 200, headers: [("content-type", "application/json")], body: body,
                delivery: .slowBody(chunks: 3, interval: .milliseconds(50)))
        }
        _ = try await history(fixture, deadline: deadline(in: .seconds(2)))
    }

    @Test func cancellingTheCallerCancelsTheTransfer() async throws {
        let fixture = try UpstreamFixture { _, _ in
            try? await Task.sleep(for: .seconds(3))
            return AppleJSON.history([])
        }
        let task = Task { await gatewayError { () throws(GatewayError) in try await history(fixture) } }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        let error = await task.value
        #expect(error == .cancelled)
        #expect(fixture.http.metrics.transfersCancelled == 1)
    }

    @Test func keyFilesAreCheckedAtStartUp() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func write(_ name: String, _ text: String, mode: Int) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
        let p256 = try ECPrivateKey(generatingOn: .p256).pkcs8PEM()
        let p384 = try ECPrivateKey(generatingOn: .p384).pkcs8PEM()
        var app = UpstreamFixture.app("example")
        func load(_ path: String, allow: Bool = false) -> ConfigurationError? {
            app.privateKeyFile = path
            do {
                _ = try AppKeySigner.load(app: app, index: 2, allowReadableFile: allow)
                return nil
            } catch {
                return error
            }
        }
        #expect(load(try write("good.p8", p256, mode: 0o600)) == nil)
        let missing = load(directory.appendingPathComponent("missing.p8").path)
        #expect(missing?.key == "apps[2].privateKeyFile")
        let readable = try write("readable.p8", p256, mode: 0o644)
        #expect(load(readable)?.problem.contains("chmod 600") == true)
        #expect(load(readable, allow: true) == nil)
        let wrongCurve = load(try write("p384.p8", p384, mode: 0o600))
        #expect(wrongCurve?.key == "apps[2].privateKeyFile")
        #expect(wrongCurve?.problem.contains("P-256") == true)
        let garbage = load(try write("garbage.p8", "not a key", mode: 0o600))
        #expect(garbage?.key == "apps[2].privateKeyFile")
        // The key never appears in an error.
        let body = p256.split(separator: "\n")[1]
        for error in [missing, wrongCurve, garbage] { #expect(error?.description.contains(body) != true) }
        #expect(!String(describing: AppKeySigner(key: try ECPrivateKey(pkcs8PEM: p256))!).contains(body))
    }
}

/// Reads the local bucket's series (waits and refusals) per app/endpoint/environment.
final class BucketEvents: Sendable {
    let metrics = AppStoreClientMetrics()

    var waits: Int { Int(metrics.rateLimits.waits.series.reduce(0) { $0 + $1.counter.current }) }
    var waitedSeconds: Double { metrics.rateLimits.waitSeconds.series.reduce(0) { $0 + $1.counter.current } }
    var refusals: [String: Int] {
        Dictionary(
            uniqueKeysWithValues: metrics.rateLimits.refusals.series.map { labels, counter in
                (labels.joined(separator: "/"), Int(counter.current))
            })
    }
}
