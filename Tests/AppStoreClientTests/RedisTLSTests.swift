import AppStoreDomain
import Configuration
import Foundation
import GatewayFoundation
import Redis
import TestSupport
import Testing

@testable import AppStoreClient

/// Redis over TLS against a real redis-server with TLS only (`--port 0 --tls-port …`, certificates from a
/// throwaway CA) and an ACL user (the default user off, so nothing works without AUTH user password): the
/// shared budget over `rediss://` with a user, the server's certificate verified (its CA, its name), a client
/// certificate for `tls-auth-clients yes`, and a wrong password or a plain client refused.
@Suite(.serialized, .enabled(if: RedisProcess.executable != nil, "redis-server is not installed"))
struct RedisTLSTests {
    let key = RateLimitKey(bundleID: "com.example.app", endpoint: .getTransactionHistory, environment: .production)
    /// The ACL: only `gateway-1`, whose password needs percent-encoding in a URL.
    static let acl = ["--user", "default", "off", "--user", "gateway-1", "on", ">p@ss:w/rd%", "~*", "&*", "+@all"]
    /// The password as a URL carries it.
    static let encodedCredentials = "gateway-1:p%40ss%3Aw%2Frd%25"

    private func url(_ redis: RedisProcess, host: String = "localhost", credentials: String = encodedCredentials)
        throws -> RedisURL
    {
        try #require(RedisURL(parsing: "rediss://\(credentials)@\(host):\(redis.port)/3"))
    }

    private func connection(_ url: RedisURL, _ files: RedisTLSFiles) -> RedisConnection {
        RedisConnection(url: url, timeout: .seconds(2), limits: .administration, tls: files)
    }

    /// The failure `connect` throws (the test fails when it connects).
    private func refusal(_ connection: RedisConnection) -> RedisConnectionFailure? {
        do {
            try connection.connect()
            Issue.record("connected")
            return nil
        } catch {
            #expect(!connection.isConnected)
            return error
        }
    }

    @Test func theSharedBudgetWorksOverTLSWithAnACLUser() async throws {
        let tls = try RedisTLSFixture()
        let redis = try RedisProcess(tls: tls, arguments: Self.acl)
        defer { redis.stop() }
        var settings = GatewayConfiguration.Redis()
        settings.url = try url(redis)
        settings.caFile = tls.caFile
        settings.keyPrefix = "tls:"
        let rate = EndpointRate(perSecond: 0.5, burst: 2)
        let recorder = Recorder()
        let budget = SharedRateBudget(
            settings: settings, limits: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: rate])),
            fallback: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: rate])),
            appNames: [:], reservationHorizon: .milliseconds(300), metrics: recorder.metrics)
        defer { budget.shutdown() }
        let now = MonotonicInstant(nanoseconds: 0)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        guard case .refused = await budget.reserve(key: key, now: now, maxWait: .zero) else {
            Issue.record("a third token was granted from a shared burst of 2")
            return
        }
        #expect(recorder.outcomes == [.taken: 2, .refused: 1])
        #expect(budget.currentMode == .shared)
        // The bucket is in database 3 of the TLS Redis, written as the ACL user.
        let admin = connection(try url(redis), RedisTLSFiles(caFile: tls.caFile))
        try admin.connect()
        let bucket = SharedBucketScript.bucketKey(key, prefix: "tls:")
        #expect(
            try admin.pipeline([["EXISTS", bucket], ["ACL", "WHOAMI"]]) == [
                .integer(1), .string(Array("gateway-1".utf8)),
            ])
    }

    @Test func anAddressIsVerifiedAgainstTheCertificatesIPAddresses() throws {
        let tls = try RedisTLSFixture(serverNames: ["127.0.0.1"])
        let redis = try RedisProcess(tls: tls, arguments: Self.acl)
        defer { redis.stop() }
        let connection = connection(try url(redis, host: "127.0.0.1"), RedisTLSFiles(caFile: tls.caFile))
        try connection.connect()
        #expect(try connection.pipeline([["PING"]]) == [.status("PONG")])
    }

    @Test func aServerCertificateFromAnotherCAIsRefused() throws {
        let tls = try RedisTLSFixture()
        let redis = try RedisProcess(tls: tls, arguments: Self.acl)
        defer { redis.stop() }
        let failure = refusal(connection(try url(redis), RedisTLSFiles(caFile: tls.otherCAFile)))
        #expect(failure?.kind == .connect)
        #expect(failure?.message.contains("certificate") == true, "\(failure?.message ?? "")")
    }

    @Test func aServerCertificateForAnotherNameIsRefused() throws {
        let tls = try RedisTLSFixture(serverNames: ["redis.internal"])
        let redis = try RedisProcess(tls: tls, arguments: Self.acl)
        defer { redis.stop() }
        for (host, reason) in [("localhost", "hostname mismatch"), ("127.0.0.1", "IP address mismatch")] {
            let failure = refusal(connection(try url(redis, host: host), RedisTLSFiles(caFile: tls.caFile)))
            #expect(failure?.message.contains(reason) == true, "\(failure?.message ?? "")")
        }
    }

    @Test func aWrongPasswordOrNoUserIsRefusedAtSetup() throws {
        let tls = try RedisTLSFixture()
        let redis = try RedisProcess(tls: tls, arguments: Self.acl)
        defer { redis.stop() }
        let files = RedisTLSFiles(caFile: tls.caFile)
        let wrong = refusal(connection(try url(redis, credentials: "gateway-1:p@ss"), files))
        #expect(wrong?.kind == .connect)
        #expect(wrong?.message.contains("WRONGPASS") == true, "\(wrong?.message ?? "")")
        // Without a user, the password is the default user's, which is off.
        let noUser = refusal(connection(try url(redis, credentials: ":p%40ss%3Aw%2Frd%25"), files))
        #expect(noUser?.message.contains("WRONGPASS") == true, "\(noUser?.message ?? "")")
    }

    @Test func aRedisThatAsksForAClientCertificateGetsOneFromCertFile() throws {
        let tls = try RedisTLSFixture()
        let redis = try RedisProcess(tls: tls, clientCertificates: true, arguments: Self.acl)
        defer { redis.stop() }
        let anonymous = refusal(connection(try url(redis), RedisTLSFiles(caFile: tls.caFile)))
        #expect(anonymous != nil)
        let files = RedisTLSFiles(
            caFile: tls.caFile, certFile: tls.clientCertificateFile, keyFile: tls.clientKeyFile)
        let connection = connection(try url(redis), files)
        try connection.connect()
        #expect(try connection.pipeline([["PING"]]) == [.status("PONG")])
    }

    @Test func aPlainClientAtATLSPortFailsInsteadOfWaiting() throws {
        let tls = try RedisTLSFixture()
        let redis = try RedisProcess(tls: tls, arguments: Self.acl)
        defer { redis.stop() }
        let plain = RedisConnection(
            url: RedisURL(host: "127.0.0.1", port: redis.port), timeout: .seconds(2), limits: .administration)
        try plain.connect()  // TCP only: no command yet
        #expect(throws: RedisConnectionFailure.self) { try plain.pipeline([["PING"]]) }
        #expect(!plain.isConnected)
    }

    @Test func unreadableTLSFilesAreAConfigurationProblemNamingTheKey() throws {
        let tls = try RedisTLSFixture()
        var settings = GatewayConfiguration.Redis()
        settings.url = RedisURL(host: "localhost", tls: true)
        settings.caFile = tls.caFile
        #expect(RedisTLSContext.problem(settings) == nil)
        settings.caFile = tls.directory.appendingPathComponent("missing.pem").path
        #expect(RedisTLSContext.problem(settings)?.key == "redis.caFile")
        settings.caFile = tls.caFile
        settings.certFile = tls.clientCertificateFile
        settings.keyFile = tls.serverKeyFile  // not the certificate's key
        #expect(RedisTLSContext.problem(settings)?.key == "redis.certFile")
        settings.keyFile = tls.clientKeyFile
        #expect(RedisTLSContext.problem(settings) == nil)
        // The client key is a secret: judged like an app's .p8.
        #expect(chmod(tls.clientKeyFile, 0o644) == 0)
        #expect(RedisTLSContext.problem(settings)?.key == "redis.keyFile")
        #expect(RedisTLSContext.problem(settings, allowReadableKeyFiles: true) == nil)
    }
}
