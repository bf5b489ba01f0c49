import AppStoreDomain
import CallerAuthentication
import Configuration
import Edge
import Foundation
import Testing

/// `tls.identityFromCommonName`, `tls.sessionMaxAge`, typed `callers[].identity` entries and `authentication.jwt.maxLifetime`.
@Suite struct AccessIdentityConfigurationTests {
    let base = """
        apps:
          - { name: example, bundleId: com.example.app, appAppleId: 1, issuerId: i, keyId: ABCDEFGHIJ, privateKeyFile: k.p8 }
        authentication: { jwt: { jwksFile: j, issuer: i, audiences: [a] } }

        """
    let mtls = "tls: { certificateFile: s.pem, privateKeyFile: s.key, clientCAFile: ca.pem }\n"

    func problems(_ yaml: String) throws -> [String] {
        try GatewayConfiguration.check(yaml: base + yaml).1.map(\.key)
    }

    @Test func defaults() throws {
        let config = try GatewayConfiguration.load(yaml: base + mtls)
        #expect(config.tls?.identityFromCommonName == false)
        #expect(config.authentication.jwt?.maxLifetime == .milliseconds(86_400_000))
    }

    @Test func commonNamesAreOptIn() throws {
        let config = try GatewayConfiguration.load(
            yaml: base + """
                tls: { certificateFile: s.pem, privateKeyFile: s.key, clientCAFile: ca.pem, identityFromCommonName: true }
                callers: [{ identity: "cn:legacy-batch", apps: [example] }]
                """)
        #expect(config.tls?.identityFromCommonName == true)
        #expect(config.callers?.first?.name == .commonName("legacy-batch"))
        // A `cn:` entry without the opt-in would never match: refused, and the opt-in needs client certificates.
        #expect(
            try problems(mtls + "callers: [{ identity: \"cn:legacy-batch\", apps: [example] }]") == [
                "callers[0].identity"
            ])
        #expect(
            try problems("tls: { certificateFile: s.pem, privateKeyFile: s.key, identityFromCommonName: true }")
                == ["tls.identityFromCommonName"])
        #expect(
            try problems(mtls.replacingOccurrences(of: "ca.pem }", with: "ca.pem, identityFromCommonName: maybe }"))
                == ["tls.identityFromCommonName"])
    }

    @Test func entriesAreTypedAndUniquePerName() throws {
        let config = try GatewayConfiguration.load(
            yaml: base + mtls + """
                callers:
                  - { identity: "system:serviceaccount:billing:api", apps: [example] }
                  - { identity: "spiffe://cluster.local/ns/billing/sa/api", apps: [example] }
                  - { identity: "dns:reports.internal", apps: [example] }
                  - { identity: "jwt:spiffe://cluster.local/ns/billing/sa/api", apps: [example] }
                """)
        #expect(
            config.callers?.map(\.name) == [
                .subject("system:serviceaccount:billing:api"), .uri("spiffe://cluster.local/ns/billing/sa/api"),
                .dns("reports.internal"), .subject("spiffe://cluster.local/ns/billing/sa/api"),
            ])
        // Two spellings of one name, and prefixes with nothing after them, are refused.
        #expect(
            try problems(
                "callers: [{ identity: billing, apps: [example] }, { identity: \"jwt:billing\", apps: [example] }]")
                == ["callers[1].identity"])
        #expect(
            try problems(
                mtls
                    + "callers: [{ identity: \"dns:A.example\", apps: [example] }, { identity: \"dns:a.example\", apps: [example] }]"
            ) == ["callers[1].identity"])
        for empty in ["dns:", "uri:", "jwt:", "cn:"] {
            #expect(try problems("callers: [{ identity: \"\(empty)\", apps: [example] }]") == ["callers[0].identity"])
        }
    }

    @Test func maxLifetimeIsReadAndBounded() throws {
        let config = try GatewayConfiguration.load(
            yaml: base.replacingOccurrences(of: "audiences: [a] }", with: "audiences: [a], maxLifetime: 1h }"))
        #expect(config.authentication.jwt?.maxLifetime == .milliseconds(3_600_000))
        for bad in ["0s", "500ms", "8808h", "soon"] {
            let yaml = base.replacingOccurrences(of: "audiences: [a] }", with: "audiences: [a], maxLifetime: \(bad) }")
            #expect(
                try GatewayConfiguration.check(yaml: yaml).1.map(\.key) == ["authentication.jwt.maxLifetime"], "\(bad)")
        }
        #expect(
            try GatewayConfiguration.load(
                yaml: base.replacingOccurrences(of: "audiences: [a] }", with: "audiences: [a], maxLifetime: 8784h }")
            ).authentication.jwt?.maxLifetime == .milliseconds(366 * 86_400_000))
    }

    @Test func sessionMaxAgeDefaultsToAnHourAndIsBounded() throws {
        #expect(try GatewayConfiguration.load(yaml: base + mtls).tls?.sessionMaxAge == .seconds(3_600))
        let config = try GatewayConfiguration.load(
            yaml: base + "tls: { certificateFile: s.pem, privateKeyFile: s.key, sessionMaxAge: 10m }\n")
        #expect(config.tls?.sessionMaxAge == .seconds(600))
        let environment = try GatewayConfiguration.load(
            yaml: base + mtls, environment: ["APPSTORE_GATEWAY_TLS_SESSION_MAX_AGE": "90s"])
        #expect(environment.tls?.sessionMaxAge == .seconds(90))
        for bad in ["0s", "500ms", "169h", "soon"] {
            #expect(
                try problems("tls: { certificateFile: s.pem, privateKeyFile: s.key, sessionMaxAge: \(bad) }")
                    == ["tls.sessionMaxAge"], "\(bad)")
        }
        // Without the server's files there is no TLS to age.
        #expect(try problems("tls: { sessionMaxAge: 1h }") == ["tls.certificateFile"])
    }
}
