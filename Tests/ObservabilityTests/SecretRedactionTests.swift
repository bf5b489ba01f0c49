import Testing

@testable import Observability

/// Which keys are secret: letters and digits only, case-insensitive, for ASCII keys and for keys whose
/// Unicode lowercasing makes ASCII letters.
@Suite struct SecretRedactionTests {
    @Test(
        arguments: [
            ("Authorization", true), ("x-authorization", true), ("private_key", true), ("PRIVATE-KEY", true),
            ("resume-token", true), ("jwt", true), ("p8Path", true), ("to_ken", true), ("TO\u{212A}EN", true),
            ("app", false), ("request_id", false), ("trace_id", false), ("p_9", false), ("", false), ("tok", false),
            ("tökén", false), ("日本token", true),
        ] as [(String, Bool)])
    func theDefaultFragmentsMatchAsDocumented(key: String, secret: Bool) {
        #expect(SecretRedaction().isSecret(key: key) == secret)
    }

    @Test func configuredFragmentsAreNormalisedLikeKeys() {
        let redaction = SecretRedaction(fragments: ["Api-Key", "", "--"])
        #expect(redaction.fragments == ["apikey"])
        #expect(redaction.isSecret(key: "x_api_key") && redaction.isSecret(key: "APIKEY"))
        #expect(!redaction.isSecret(key: "api") && !redaction.isSecret(key: "token"))
        #expect(redaction == SecretRedaction(fragments: ["apikey"]))
    }
}
