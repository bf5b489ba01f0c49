import AppStoreDomain
import Testing

@testable import Configuration

/// `notifications.resumeTokenKeyFile` and `notifications.resumeTokenMaxAge`: documented defaults, values
/// read from the file or the environment, bad values refused naming the key, and the key they replaced
/// (`notifications.resumeTokenKey`, a raw key file) refused with what to use instead.
@Suite struct ResumeTokenConfigurationTests {
    @Test func theDefaultsAreNoRingAnd30Days() throws {
        let config = try GatewayConfiguration.load(yaml: "")
        #expect(config.notifications.resumeTokenKeyFile == "")
        #expect(config.notifications.resumeTokenMaxAge == .milliseconds(30 * 86_400_000))
    }

    @Test func theRingFileAndMaxAgeAreRead() throws {
        let config = try GatewayConfiguration.load(
            yaml: "notifications: {resumeTokenKeyFile: /secrets/ring, resumeTokenMaxAge: 7d}")
        #expect(config.notifications.resumeTokenKeyFile == "/secrets/ring")
        #expect(config.notifications.resumeTokenMaxAge == .milliseconds(7 * 86_400_000))
        let overridden = try GatewayConfiguration.load(
            yaml: "", environment: ["APPSTORE_GATEWAY_NOTIFICATIONS_RESUME_TOKEN_MAX_AGE": "12h"])
        #expect(overridden.notifications.resumeTokenMaxAge == .milliseconds(12 * 3_600_000))
    }

    @Test(arguments: ["0s", "500ms", "3651d", "soon"]) func aBadMaxAgeNamesTheKey(value: String) {
        do {
            _ = try GatewayConfiguration.load(yaml: "notifications: {resumeTokenMaxAge: \(value)}")
            Issue.record("\(value) was accepted")
        } catch {
            #expect(error.key == "notifications.resumeTokenMaxAge")
        }
    }

    @Test func theReplacedKeyIsRefusedWithItsSuccessor() {
        for (yaml, environment) in [
            ("notifications: {resumeTokenKey: /secrets/key}", [:]),
            ("", ["APPSTORE_GATEWAY_NOTIFICATIONS_RESUME_TOKEN_KEY": "/secrets/key"]),
        ] {
            do {
                _ = try GatewayConfiguration.load(yaml: yaml, environment: environment)
                Issue.record("notifications.resumeTokenKey was accepted")
            } catch {
                #expect(error.key == "notifications.resumeTokenKey")
                #expect(error.problem.contains("notifications.resumeTokenKeyFile"))
            }
        }
    }
}
