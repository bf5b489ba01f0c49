import AppStoreClient
import AppStoreDomain
import Configuration
import Foundation
import ProtoCodec
import Services
import Testing

/// `subscriptions.webhooks` and `notifications.forward`: defaults, app names and event type names, durations with
/// units, every bad value refused naming its key, and the secret files read at start (one secret per line).
@Suite struct SinkConfigurationTests {
    static let apps = """
        apps:
          - name: example
            bundleId: com.example.app
            appAppleId: 1
            issuerId: i
            keyId: ABCDEFGHIJ
            privateKeyFile: k.p8
          - name: other
            bundleId: com.example.other
            appAppleId: 2
            issuerId: i
            keyId: ABCDEFGHIJ
            privateKeyFile: k.p8

        """

    func problem(_ yaml: String) -> ConfigurationError? {
        do {
            _ = try GatewayConfiguration.load(yaml: Self.apps + yaml)
            return nil
        } catch {
            return error
        }
    }

    @Test func aWebhookTakesEveryAppAndTypeAndTheDocumentedDefaults() throws {
        let config = try GatewayConfiguration.load(
            yaml: Self.apps
                + "subscriptions: {webhooks: [{url: 'https://team.example/hooks', secretFile: team.secret}]}")
        let webhook = try #require(config.subscriptions.webhooks.first)
        #expect(webhook.url == "https://team.example/hooks")
        #expect(webhook.secretFile == "team.secret")
        #expect(webhook.apps.isEmpty && webhook.types.isEmpty)
        #expect(webhook.retries.timeout == .seconds(10))
        #expect(webhook.retries.maxBackoff == .seconds(300))
        #expect(webhook.retries.maxAge == .seconds(86_400))
        #expect(try GatewayConfiguration.load(yaml: Self.apps).subscriptions.webhooks.isEmpty)
        #expect(try GatewayConfiguration.load(yaml: Self.apps).notifications.forward.isEmpty)
    }

    @Test func aRedisStreamNeedsAKeyAndRedis() throws {
        let redis = "redis: {url: 'redis://127.0.0.1:6379/0'}\n"
        let config = try GatewayConfiguration.load(
            yaml: Self.apps + redis + "subscriptions: {redisStream: {key: 'team:events'}}")
        let stream = try #require(config.subscriptions.redisStream)
        #expect(stream.key == "team:events")
        #expect(stream.maxLength == 1_000_000)
        #expect(stream.retries.maxAge == .seconds(86_400))
        let tuned = try GatewayConfiguration.load(
            yaml: Self.apps + redis + "subscriptions: {redisStream: {key: k, maxLen: 500, maxBackoff: 2s, maxAge: 1h}}")
        #expect(tuned.subscriptions.redisStream?.maxLength == 500)
        #expect(tuned.subscriptions.redisStream?.retries.maxBackoff == .seconds(2))
        #expect(try GatewayConfiguration.load(yaml: Self.apps).subscriptions.redisStream == nil)
        #expect(problem("subscriptions: {redisStream: {key: k}}")?.key == "subscriptions.redisStream")
        #expect(problem(redis + "subscriptions: {redisStream: {maxLen: 5}}")?.key == "subscriptions.redisStream.key")
        #expect(problem(redis + "subscriptions: {redisStream: {key: 'a b'}}")?.key == "subscriptions.redisStream.key")
        #expect(
            problem(redis + "subscriptions: {redisStream: {key: k, maxLen: 0}}")?.key
                == "subscriptions.redisStream.maxLen")
        #expect(problem(redis + "subscriptions: {redisStream: events}")?.key == "subscriptions.redisStream")
    }

    @Test func appsByNameOrBundleIdTypesByEitherNameAndDurationsWithUnits() throws {
        let config = try GatewayConfiguration.load(
            yaml: Self.apps + """
                subscriptions:
                  webhooks:
                    - url: http://127.0.0.1:8080/events
                      secretFile: /secrets/team
                      apps: [example, com.example.other, example]
                      types: [RENEWAL, SUBSCRIPTION_EVENT_TYPE_EXPIRATION, entitlement_granted]
                      timeout: 1s
                      maxBackoff: 2m
                      maxAge: 30d
                """)
        let webhook = try #require(config.subscriptions.webhooks.first)
        #expect(webhook.apps == ["example", "other"])
        #expect(webhook.types == [.renewal, .expiration, .entitlementGranted])
        #expect(webhook.retries.timeout == .seconds(1))
        #expect(webhook.retries.maxBackoff == .seconds(120))
        #expect(webhook.retries.maxAge == .seconds(30 * 86_400))
    }

    @Test func aRelayEndpointTakesItsDefaultsAndItsOwnDurations() throws {
        let config = try GatewayConfiguration.load(
            yaml: Self.apps + """
                notifications:
                  forward:
                    - url: https://legacy.example/apple
                    - {url: 'http://10.0.0.1:9000/n', timeout: 500ms, maxBackoff: 10s, maxAge: 2h}
                """)
        #expect(config.notifications.forward.map(\.url) == ["https://legacy.example/apple", "http://10.0.0.1:9000/n"])
        #expect(config.notifications.forward[0].retries.timeout == .seconds(10))
        #expect(config.notifications.forward[0].retries.maxAge == .seconds(86_400))
        #expect(config.notifications.forward[1].retries.timeout == .milliseconds(500))
        #expect(config.notifications.forward[1].retries.maxBackoff == .seconds(10))
        #expect(config.notifications.forward[1].retries.maxAge == .seconds(7_200))
    }

    @Test(arguments: [
        ("{secretFile: s}", "subscriptions.webhooks[0].url"),
        ("{url: 'ftp://x/y', secretFile: s}", "subscriptions.webhooks[0].url"),
        ("{url: 'https://', secretFile: s}", "subscriptions.webhooks[0].url"),
        ("{url: 'https://host:0/x', secretFile: s}", "subscriptions.webhooks[0].url"),
        ("{url: 'https://h/x'}", "subscriptions.webhooks[0].secretFile"),
        ("{url: 'https://h/x', secretFile: s, apps: [nope]}", "subscriptions.webhooks[0].apps[0]"),
        ("{url: 'https://h/x', secretFile: s, types: [RENEWAL, SOMETIMES]}", "subscriptions.webhooks[0].types[1]"),
        ("{url: 'https://h/x', secretFile: s, types: [UNSPECIFIED]}", "subscriptions.webhooks[0].types[0]"),
        ("{url: 'https://h/x', secretFile: s, timeout: 50ms}", "subscriptions.webhooks[0].timeout"),
        ("{url: 'https://h/x', secretFile: s, maxBackoff: soon}", "subscriptions.webhooks[0].maxBackoff"),
        ("{url: 'https://h/x', secretFile: s, maxAge: 500ms}", "subscriptions.webhooks[0].maxAge"),
        ("{url: 'https://h/x', secretFile: s, retries: 3}", "subscriptions.webhooks[0].retries"),
    ])
    func aBadWebhookNamesItsKey(entry: String, key: String) {
        #expect(problem("subscriptions: {webhooks: [\(entry)]}")?.key == key)
    }

    @Test func twoWebhooksOrTwoRelaysWithOneURLAreRefused() {
        #expect(
            problem(
                "subscriptions: {webhooks: [{url: 'https://h/x', secretFile: a}, {url: 'https://h/x', secretFile: b}]}")?
                .key == "subscriptions.webhooks[1].url")
        #expect(
            problem("notifications: {forward: [{url: 'https://h/x'}, {url: 'https://h/x'}]}")?.key
                == "notifications.forward[1].url")
        #expect(problem("notifications: {forward: [{url: 'h/x'}]}")?.key == "notifications.forward[0].url")
        #expect(
            problem("notifications: {forward: [{url: 'https://h/x', maxAge: 0s}]}")?.key
                == "notifications.forward[0].maxAge")
    }

    @Test func aSecretFileIsReadRelativeToTheConfigurationOneSecretPerLine() throws {
        let directory = NSTemporaryDirectory() + "sink-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/team.secret"
        _ = FileManager.default.createFile(
            atPath: path, contents: Data("  new-secret \n\n old-secret\r\n".utf8),
            attributes: [.posixPermissions: 0o600])
        var config = try GatewayConfiguration.load(
            yaml: Self.apps + "subscriptions: {webhooks: [{url: 'https://h/x', secretFile: team.secret}]}")
        config.resolvePaths(relativeTo: directory)
        #expect(config.subscriptions.webhooks[0].secretFile == path)
        #expect(try TeamWebhook.secrets(config) == [[Array("new-secret".utf8), Array("old-secret".utf8)]])

        // Readable by others: refused like a .p8, naming the key.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: ConfigurationError.self) { try TeamWebhook.secrets(config) }
        config.apple.allowReadableKeyFiles = true
        #expect(try TeamWebhook.secrets(config).first?.count == 2)

        // Empty (blank lines only) or missing: refused, naming the key.
        _ = FileManager.default.createFile(atPath: path, contents: Data(" \n\n".utf8))
        do {
            _ = try TeamWebhook.secrets(config)
            Issue.record("an empty secret file was accepted")
        } catch {
            #expect(error.key == "subscriptions.webhooks[0].secretFile")
        }
        config.subscriptions.webhooks[0].secretFile = directory + "/missing"
        do {
            _ = try TeamWebhook.secrets(config)
            Issue.record("a missing secret file was accepted")
        } catch {
            #expect(error.key == "subscriptions.webhooks[0].secretFile")
        }
    }
}
