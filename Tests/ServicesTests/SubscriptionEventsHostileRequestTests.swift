import GRPC
import GatewayFoundation
import ProtoCodec
import ServiceHarness
import Testing

@testable import Services

/// WatchSubscriptionEvents through the server's own call path: whatever a caller sends (bytes that are no request,
/// hostile tokens, unknown types, huge fields), the answer is a status that names the problem, never INTERNAL or
/// UNKNOWN, and a valid stream with nothing to send ends at the caller's deadline.
@Suite(.serialized) struct SubscriptionEventsHostileRequestTests {
    private let harness = ServiceHarness.shared
    private static let method = "/appstore.gateway.v1.SubscriptionState/WatchSubscriptionEvents"

    private func call(_ request: WatchSubscriptionEventsRequest) async -> ServiceHarness.Outcome {
        await harness.call(Self.method, request: request.serializedBytes())
    }

    @Test func randomBytesAndHostileFieldsNeverTrapNorAnswerInternal() async {
        var generator = SplitMix64(seed: 47)
        for round in 0..<150 {
            let bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                var request = WatchSubscriptionEventsRequest()
                request.resumeToken = String(
                    decoding: (0..<Int.random(in: 1...1100, using: &generator)).map { _ in
                        UInt8.random(in: 32...126, using: &generator)
                    }, as: UTF8.self)
                request.types = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                    SubscriptionEventType(rawValue: Int32.random(in: -2...25, using: &generator))
                }
                request.app = round % 3 == 0 ? String(repeating: "a", count: 300) : ""
                bytes = request.serializedBytes()
            }
            let outcome = await harness.call(Self.method, request: bytes)
            let code = outcome.status.code
            #expect(code != .internal && code != .unknown && code != .ok, "\(round): \(outcome.status)")
            #expect(outcome.responses.isEmpty)
        }
    }

    @Test func aTamperedTokenAndUnknownTypesAreInvalidArgument() async {
        var request = WatchSubscriptionEventsRequest()
        request.resumeToken =
            "AwAAAaIlpQrkAAAAAAAAAAFBxNh0-8Z4NXOgoIy4qFBWLxEdOQarH1VxR1HjbgH8FjvwSYj5BEhf26jYO4uQBXbNUJCrNN1KhPKHBCIqK6sE"
        var outcome = await call(request)
        #expect(outcome.status.code == .invalidArgument)
        #expect(outcome.status.message.contains("resume_token"))
        request = WatchSubscriptionEventsRequest()
        request.types = [.unrecognized(99)]
        outcome = await call(request)
        #expect(outcome.status.code == .invalidArgument)
        #expect(outcome.status.message.contains("types"))
        request.types = [.unspecified]
        #expect(await call(request).status.code == .invalidArgument)
    }

    @Test func aQuietStreamEndsAtTheCallersDeadline() async {
        var request = WatchSubscriptionEventsRequest()
        request.fromBeginning = true
        let outcome = await call(request)
        #expect(outcome.status.code == .deadlineExceeded)
        #expect(outcome.responses.isEmpty)
    }
}

@Suite struct SubscriptionStateMetricsTests {
    @Test func eventTypesAreLabelledWithTheirProtoNames() {
        #expect(SubscriptionStateMetrics.name(.initialPurchase) == "INITIAL_PURCHASE")
        #expect(SubscriptionStateMetrics.name(.entitlementGranted) == "ENTITLEMENT_GRANTED")
        #expect(SubscriptionStateMetrics.name(.renewal) == "RENEWAL")
        #expect(SubscriptionStateMetrics.name(.unrecognized(42)) == "42")
        for type in SubscriptionEventType.allCases where type != .unspecified {
            #expect(SubscriptionStateMetrics.name(type).allSatisfy { $0.isUppercase || $0 == "_" })
        }
    }
}
