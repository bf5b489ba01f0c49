import AppStoreDomain
import GatewayFoundation
import Testing

@testable import Configuration

/// The admin port's keys: `admin: HOST:PORT` as before, or a mapping of `listen` and `bearerTokenFile`;
/// `APPSTORE_GATEWAY_ADMIN` overrides the address in either form; a bad address names the key it came from.
@Suite struct AdminConfigurationTests {
    @Test func theDefaultsAreAllInterfacesAndNoToken() throws {
        let config = try GatewayConfiguration.load(yaml: "")
        #expect(config.admin == ListenAddress(host: "0.0.0.0", port: 9090))
        #expect(config.adminBearerTokenFile == "")
    }

    @Test func theAddressAloneAndOffStillWork() throws {
        #expect(try GatewayConfiguration.load(yaml: "admin: 127.0.0.1:9100").admin?.port == 9100)
        #expect(try GatewayConfiguration.load(yaml: #"admin: """#).admin == nil)
    }

    @Test func aMappingNamesTheAddressAndTheTokenFile() throws {
        let config = try GatewayConfiguration.load(
            yaml: "admin: {listen: 127.0.0.1:9100, bearerTokenFile: /etc/appstore-gateway-admin/token}")
        #expect(config.admin == ListenAddress(host: "127.0.0.1", port: 9100))
        #expect(config.adminBearerTokenFile == "/etc/appstore-gateway-admin/token")
        let defaultAddress = try GatewayConfiguration.load(yaml: "admin: {bearerTokenFile: token}")
        #expect(defaultAddress.admin?.port == 9090 && defaultAddress.adminBearerTokenFile == "token")
        var relative = defaultAddress
        relative.resolvePaths(relativeTo: "/config")
        #expect(relative.adminBearerTokenFile == "/config/token")
    }

    @Test func theEnvironmentOverridesEitherForm() throws {
        let environment = [
            "APPSTORE_GATEWAY_ADMIN": "127.0.0.1:0", "APPSTORE_GATEWAY_ADMIN_BEARER_TOKEN_FILE": "/run/token",
        ]
        for yaml in ["", "admin: 0.0.0.0:9090", "admin: {listen: 0.0.0.0:9090, bearerTokenFile: /etc/token}"] {
            let (config, problems) = try GatewayConfiguration.check(yaml: yaml, environment: environment)
            #expect(problems.isEmpty, "\(problems)")
            #expect(config.admin == ListenAddress(host: "127.0.0.1", port: 0))
            #expect(config.adminBearerTokenFile == "/run/token")
        }
    }

    @Test func aBadAddressOrAnUnknownKeyIsNamed() throws {
        for (yaml, key) in [
            ("admin: nowhere", "admin"), ("admin: {listen: nowhere}", "admin.listen"),
            ("admin: {listen: 127.0.0.1:1, token: x}", "admin.token"),
            ("admin: {bearerTokenFile: [a, b]}", "admin.bearerTokenFile"),
        ] {
            let (_, problems) = try GatewayConfiguration.check(yaml: yaml)
            #expect(problems.map(\.key) == [key], "\(yaml)")
        }
    }
}
