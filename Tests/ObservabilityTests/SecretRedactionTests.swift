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

    /// The search finds a fragment at either end, after a false start, and in a key longer than the stack
    /// buffer (256 bytes); a key ending in a fragment's prefix or shorter than every fragment is not secret.
    @Test(
        arguments: [
            ("tokenx", true), ("xtoken", true), ("tototoken", true), ("ttoken", true), ("jjwt", true),
            ("p", false), ("tokexn", false), ("xtoke", false), ("pp", false), ("authorizatio", false),
            ("x_p_8", true), ("AUTH-ORIZATION", true), (String(repeating: "a", count: 300) + "_JWT", true),
            (String(repeating: "to", count: 200), false), (String(repeating: "é", count: 200) + "token", true),
        ] as [(String, Bool)])
    func theSearchFindsFragmentsAnywhere(key: String, secret: Bool) {
        #expect(SecretRedaction().isSecret(key: key) == secret)
    }

    /// Fragments that share their first byte, or are inside one another, are each found.
    @Test func fragmentsSharingAFirstByteAreEachFound() {
        let redaction = SecretRedaction(fragments: ["session", "secret", "s3", "cookie"])
        #expect(redaction.isSecret(key: "x-secret") && redaction.isSecret(key: "SESSION_ID"))
        #expect(redaction.isSecret(key: "aws_s3_url") && redaction.isSecret(key: "Set-Cookie"))
        #expect(
            !redaction.isSecret(key: "sessio") && !redaction.isSecret(key: "secre") && !redaction.isSecret(key: "s"))
        #expect(!SecretRedaction(fragments: []).isSecret(key: "token"))
    }

    /// A one-byte fragment is found anywhere (the two-byte prefilter does not apply to it).
    @Test func aOneByteFragmentIsFoundAnywhere() {
        let redaction = SecretRedaction(fragments: ["q", "key"])
        #expect(redaction.isSecret(key: "q") && redaction.isSecret(key: "aq") && redaction.isSecret(key: "x-Q-y"))
        #expect(redaction.isSecret(key: "api_KEY") && !redaction.isSecret(key: "abc") && !redaction.isSecret(key: "ke"))
    }
}
