import ServiceHarness
import TestSupport
import Testing

@testable import Edge

/// The webhook's fuzz corpus and regressions replayed through the handler (no fuzzer build needed).
@Suite(.serialized) struct WebhookFuzzReplayTests {
    @Test func fuzzInputsReplayToAnAllowedStatus() async {
        let inputs = FuzzInputs.of("webhook-handler")
        #expect(inputs.count >= 5)
        for input in inputs {
            let status = await WebhookHarness.shared.fuzz(input)
            #expect(status == 400, "no fuzz seed is a genuine, configured notification")
        }
    }
}
