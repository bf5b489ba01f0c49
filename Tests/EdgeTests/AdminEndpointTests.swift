import AppStoreDomain
import Configuration
import Cryptography
import Foundation
import GRPC
import HTTPServer
import Metrics
import Observability
import SignedData
import Testing

@testable import Edge

/// The admin port's bearer token (`admin.bearerTokenFile`): `/metrics` and every other path but the probes'
/// answer 401 with a Bearer challenge unless the request carries the token; the token file is checked like a
/// key file and parsed strictly; a replaced token is in force at once.
@Suite struct AdminEndpointTests {
    static let token = "k3Jz0Q9mXvYt2bLw8pRe5sUa7dHn4cGf1iOyZ6TqBxM="

    static func endpoint(token: AdminBearerToken?) throws -> AdminEndpoint {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let root = try Certificate(contentsOfFile: repository.appendingPathComponent("certs/AppleRootCA-G3.cer").path)
        return AdminEndpoint(
            registry: MetricsRegistry(), board: HealthStatusBoard(services: ["svc"]), readinessService: "svc",
            connections: { [:] }, verifier: try SignedDataVerifier(configuration: .init(trustedRoots: [root])),
            rateLimiter: RateLimiter(), token: token)
    }

    static func get(_ path: String, _ headers: [(name: String, value: String)] = []) -> HTTPRequest {
        HTTPRequest(method: "GET", target: path, headers: headers)
    }

    static func bearer(_ credentials: String) -> [(name: String, value: String)] {
        [("authorization", "Bearer \(credentials)")]
    }

    @Test func withoutATokenEveryPathIsOpenAsBefore() async throws {
        let admin = try Self.endpoint(token: nil)
        #expect(await admin.handle(Self.get("/metrics")).status == 200)
        #expect(await admin.handle(Self.get("/readyz")).status == 200)
    }

    @Test func metricsNeedTheTokenAndAMissingOneIsChallengedWithoutAnError() async throws {
        let admin = try Self.endpoint(token: AdminBearerToken(token: Array(Self.token.utf8)))
        for request in [Self.get("/metrics"), HTTPRequest(method: "HEAD", target: "/metrics")] {
            let answer = await admin.handle(request)
            #expect(answer.status == 401)
            #expect(answer.headers.contains { $0 == ("www-authenticate", #"Bearer realm="appstore-gateway admin""#) })
            #expect(!String(decoding: answer.body, as: UTF8.self).contains("appstore_gateway"))
        }
        // Another scheme is no bearer credential at all (RFC 6750 §3.1: no error code).
        let basic = await admin.handle(Self.get("/metrics", [("authorization", "Basic dXNlcjpwYXNz")]))
        #expect(basic.status == 401 && basic.headers.contains { $0.1 == #"Bearer realm="appstore-gateway admin""# })
        let granted = await admin.handle(Self.get("/metrics", Self.bearer(Self.token)))
        #expect(granted.status == 200)
        #expect(String(decoding: granted.body, as: UTF8.self).contains("# TYPE "))
        // The scheme is case-insensitive (RFC 7235 §2.1); more than one space may separate it.
        #expect(await admin.handle(Self.get("/metrics", [("authorization", "bEaReR   \(Self.token)")])).status == 200)
    }

    /// The `authorization` fields of requests that are refused as bearing a wrong token (token: `Self.token`).
    static let wrongFields: [[String]] = [
        ["Bearer k3Jz0Q9mXvYt2bLw8pRe5sUa7dHn4cGf1iOyZ6TqBxM"],  // the token less its padding
        ["Bearer \(token)x"], ["Bearer \(token.dropLast(2))=="], ["Bearer "], ["Bearer"], ["Bearer \(token) extra"],
        ["Bearer \u{e9}\(token)"], ["Bearer \(token)", "Bearer \(token)"], ["Basic x", "Bearer \(token)"],
    ]

    @Test(arguments: wrongFields)
    func aWrongOrMalformedTokenIsAnInvalidToken(fields: [String]) async throws {
        let headers = fields.map { (name: "authorization", value: $0) }
        let admin = try Self.endpoint(token: AdminBearerToken(token: Array(Self.token.utf8)))
        let answer = await admin.handle(Self.get("/metrics", headers))
        #expect(answer.status == 401)
        #expect(
            answer.headers.contains {
                $0 == ("www-authenticate", #"Bearer realm="appstore-gateway admin", error="invalid_token""#)
            })
    }

    @Test func theProbesStayOpenAndUnknownPathsTellNothingWithoutTheToken() async throws {
        let admin = try Self.endpoint(token: AdminBearerToken(token: Array(Self.token.utf8)))
        #expect(await admin.handle(Self.get("/healthz")).status == 200)
        #expect(await admin.handle(Self.get("/readyz")).status == 200)
        #expect(await admin.handle(Self.get("/readyz?verbose")).status == 200)
        #expect(await admin.handle(Self.get("/admin/secret")).status == 401)
        #expect(await admin.handle(Self.get("/healthz/../metrics")).status == 401)
        #expect(await admin.handle(Self.get("/admin/secret", Self.bearer(Self.token))).status == 404)
    }

    @Test func aReplacedTokenIsInForceAtOnce() {
        let holder = AdminBearerToken(token: Array("old-token-0123456789abcdefghijklmnop".utf8))
        #expect(holder.accepts(Array("old-token-0123456789abcdefghijklmnop".utf8)))
        holder.replace(with: Array(Self.token.utf8))
        #expect(holder.accepts(Array(Self.token.utf8)))
        #expect(!holder.accepts(Array("old-token-0123456789abcdefghijklmnop".utf8)))
        #expect(!holder.accepts([]))
    }

    @Test func theTokenFileIsOneStrongBearerTokenAndAProblemNeverQuotesIt() throws {
        #expect(try AdminBearerToken.parse(Array("  \(Self.token)\r\n".utf8), path: "t") == Array(Self.token.utf8))
        let weak = "short-but-valid-chars"
        for (content, problem) in [
            ("", "holds no token"), ("\n \n", "holds no token"),
            ("\(Self.token)\n\(Self.token)", "does not hold one bearer token"),
            ("\(Self.token) extra", "does not hold one bearer token"),
            ("\(Self.token)=x", "does not hold one bearer token"), (weak, "of 21 characters"),
            (String(repeating: "a", count: 4097), "larger than 4 KiB"),
        ] {
            let error = #expect(throws: ConfigurationError.self) {
                try AdminBearerToken.parse(Array(content.utf8), path: "t")
            }
            #expect(error?.key == "admin.bearerTokenFile")
            #expect(error?.problem.contains(problem) == true, "\(error?.problem ?? "")")
            #expect(error?.problem.contains(Self.token) == false && error?.problem.contains(weak) == false)
        }
    }

    @Test func theTokenFileIsJudgedLikeAKeyFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("admin-token-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/token"
        _ = FileManager.default.createFile(atPath: path, contents: Data(Self.token.utf8))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(try AdminBearerToken.load(path: path, allowReadableFile: false) == Array(Self.token.utf8))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let error = #expect(throws: ConfigurationError.self) {
            try AdminBearerToken.load(path: path, allowReadableFile: false)
        }
        #expect(error?.problem.contains("mode 644") == true)
        #expect(try AdminBearerToken.load(path: path, allowReadableFile: true) == Array(Self.token.utf8))
        #expect(throws: ConfigurationError.self) {
            try AdminBearerToken.load(path: directory + "/missing", allowReadableFile: false)
        }
    }

    @Test func theConfigurationNamesTheTokenOnlyWithTheAdminPortOn() throws {
        var configuration = GatewayConfiguration()
        #expect(try AdminBearerToken.token(configuration) == nil)
        configuration.adminBearerTokenFile = "/nonexistent/admin-token"
        #expect(throws: ConfigurationError.self) { try AdminBearerToken.token(configuration) }
        configuration.admin = nil
        #expect(try AdminBearerToken.token(configuration) == nil)
    }
}
