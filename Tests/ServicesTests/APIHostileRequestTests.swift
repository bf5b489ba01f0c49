import GRPC
import ProtoCodec
import ServiceHarness
import TestSupport
import Testing

/// The `fuzz-api-handlers` corpus replayed through the App Store Server API RPCs and offer signatures as the
/// server runs them (request bytes → handler → response bytes) with the simulator as Apple.
@Suite(.serialized) struct APIHostileRequestTests {
    private let harness = ServiceHarness.shared

    @Test func fuzzInputsReplayWithoutTrap() async {
        let inputs = FuzzInputs.of("api-handlers")
        #expect(inputs.count >= ServiceHarness.apiMethods.count)
        var methods = Set<Int>()
        for input in inputs {
            await harness.fuzzAPI(input: input)
            if let first = input.first { methods.insert(Int(first) % ServiceHarness.apiMethods.count) }
        }
        #expect(methods.count == ServiceHarness.apiMethods.count, "every method has a seed")
    }

    @Test func pathSegmentsThatWalkAreRefusedBeforeApple() async {
        for id in [".", "..", "%2e%2e", "1/2", "123456789012345678901"] {
            var request = GetTransactionInfoRequest()
            request.transactionId = id
            let outcome = await harness.fuzzAPI(input: [0] + request.serializedBytes())
            #expect(outcome.status.code == .invalidArgument, "\(id)")
        }
        var status = GetStatusOfSubscriptionRenewalDateExtensionsRequest()
        status.productId = ".."
        status.requestIdentifier = "x"
        #expect(await harness.fuzzAPI(input: [8] + status.serializedBytes()).status.code == .invalidArgument)
    }

    @Test func aThousandStatusFiltersAreOneViolation() async {
        var request = GetAllSubscriptionStatusesRequest()
        request.transactionId = "1"
        request.status = Array(repeating: .active, count: 1000)
        let outcome = await harness.fuzzAPI(input: [1] + request.serializedBytes())
        #expect(outcome.status.code == .invalidArgument)
        #expect(outcome.status.message.contains("status"))
    }
}
