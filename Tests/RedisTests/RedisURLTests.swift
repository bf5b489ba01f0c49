import AppStoreClient
import AppStoreDomain
import Configuration
import Redis
import Testing

/// `redis.url` with TLS (`rediss://`) and ACL users (percent-decoded user and password, never printed), and
/// the rules of `redis.caFile`, `redis.certFile` and `redis.keyFile`.
@Suite struct RedisURLTests {
    @Test func aTLSURLWithAnACLUserAndAnEncodedPassword() throws {
        let url = try #require(RedisURL(parsing: "rediss://svc%2Dgateway:p%40ss%3Aw%2Frd%25@redis.internal:6380/2"))
        #expect(
            url
                == RedisURL(
                    host: "redis.internal", port: 6380, database: 2, username: "svc-gateway", password: "p@ss:w/rd%",
                    tls: true))
        #expect(url.description == "rediss://svc-gateway:***@redis.internal:6380/2")
    }

    @Test(arguments: [
        ("redis://h", RedisURL(host: "h")),
        ("rediss://h", RedisURL(host: "h", tls: true)),
        ("redis://:pw@h:7000", RedisURL(host: "h", port: 7000, password: "pw")),
        ("redis://pw@h", RedisURL(host: "h", password: "pw")),  // one credential without a colon: the password
        ("redis://alice:@h/0", RedisURL(host: "h", username: "alice", password: "")),
        (
            "rediss://alice:a%3ab@[::1]:6379/15",
            RedisURL(host: "::1", database: 15, username: "alice", password: "a:b", tls: true)
        ),
        ("redis://u:p%C3%A9@h", RedisURL(host: "h", username: "u", password: "pé")),
        ("redis://u:100%25@h", RedisURL(host: "h", username: "u", password: "100%")),
    ])
    func formsParse(text: String, expected: RedisURL) {
        #expect(RedisURL(parsing: text) == expected)
    }

    @Test(arguments: [
        "http://h", "redis:/h", "rediss:h", "redisss://h", "redis://", "rediss://:pw@", "redis://u:p%4@h",
        "redis://u:p%zz@h", "redis://u:p%@h", "redis://u%ff:p@h", "redis://u:p%C3@h", "rediss://h:0", "rediss://h/x",
    ])
    func malformedURLsAreRefused(text: String) {
        #expect(RedisURL(parsing: text) == nil)
    }

    @Test func theDescriptionNeverHoldsThePasswordAndKeepsTheUserReadable() throws {
        let url = try #require(RedisURL(parsing: "rediss://team%20a:hunter2@h:1/3"))
        #expect(url.username == "team a")
        #expect(url.description == "rediss://team%20a:***@h:1/3")
        #expect(try #require(RedisURL(parsing: "redis://h")).description == "redis://h:6379/0")
    }

    @Test func aBadURLsErrorNeverHoldsItsCredentials() {
        do {
            _ = try GatewayConfiguration.load(yaml: "redis:\n  url: rediss://alice:hunter%2@host")
            Issue.record("a malformed escape was accepted")
        } catch {
            #expect(error.key == "redis.url")
            #expect(!"\(error)".contains("hunter") && !"\(error)".contains("alice"))
            #expect("\(error)".contains("rediss://***@host"))
        }
    }

    @Test func theTLSFilesLoadWithARedissURLAndResolveBesideTheConfiguration() throws {
        var config = try GatewayConfiguration.load(
            yaml: """
                redis:
                  url: rediss://gateway:secret@redis.internal:6380/0
                  caFile: tls/redis-ca.pem
                  certFile: /etc/redis-client/tls.crt
                  keyFile: /etc/redis-client/tls.key
                """)
        config.resolvePaths(relativeTo: "/etc/gateway")
        #expect(config.redis.url?.tls == true)
        #expect(config.redis.caFile == "/etc/gateway/tls/redis-ca.pem")
        #expect(config.redis.certFile == "/etc/redis-client/tls.crt")
        #expect(config.redis.keyFile == "/etc/redis-client/tls.key")
    }

    @Test func theCAFileComesFromTheEnvironmentToo() throws {
        let config = try GatewayConfiguration.load(
            yaml: "",
            environment: [
                "APPSTORE_GATEWAY_REDIS_URL": "rediss://gateway:secret@redis:6380",
                "APPSTORE_GATEWAY_REDIS_CA_FILE": "/etc/redis-ca/ca.crt",
            ])
        #expect(
            config.redis.url == RedisURL(host: "redis", port: 6380, username: "gateway", password: "secret", tls: true))
        #expect(config.redis.caFile == "/etc/redis-ca/ca.crt")
    }

    @Test(arguments: [
        ("redis:\n  url: redis://h\n  caFile: ca.pem", "redis.caFile"),
        ("redis:\n  caFile: ca.pem", "redis.caFile"),
        ("redis:\n  url: redis://h\n  certFile: c.pem\n  keyFile: k.pem", "redis.certFile"),
        ("redis:\n  url: rediss://h\n  certFile: c.pem", "redis.keyFile"),
        ("redis:\n  url: rediss://h\n  keyFile: k.pem", "redis.keyFile"),
    ])
    func tlsFilesNeedARedissURLAndTheCertificateItsKey(yaml: String, key: String) {
        do {
            _ = try GatewayConfiguration.load(yaml: yaml)
            Issue.record("accepted: \(yaml)")
        } catch {
            #expect(error.key == key, "\(error)")
        }
    }
}
