import GRPC
import ProtoCodec
import ServiceHarness
import Testing

/// The harness takes the served path — the router, the call guard, `ServerCall` and its framing — so what the
/// replayed fuzz inputs and hostile requests meet is what a caller meets, not the handlers called on their own.
@Suite(.serialized) struct ServiceHarnessTests {
    private let harness = ServiceHarness.shared

    @Test func anUnknownMethodIsTheRoutersUnimplemented() async {
        let outcome = await harness.call("/appstore.gateway.v1.AppStoreGateway/NoSuchMethod", request: [])
        #expect(outcome.status.code == .unimplemented)
        #expect(outcome.status.message.contains("unknown method"))
        #expect(outcome.responses.isEmpty)
    }

    @Test func theServedServicesBesideTheGatewaysAnswerToo() async throws {
        var request = HealthCheckRequest()
        request.service = "appstore.gateway.v1.AppStoreGateway"
        let outcome = await harness.call("/grpc.health.v1.Health/Check", request: request.serializedBytes())
        #expect(outcome.status.code == .ok)
        let response = try HealthCheckResponse(serializedBytes: try #require(outcome.responses.first))
        #expect(response.status == .serving)
    }

    /// Refused by the call's deframer against `limits.maxReceiveMessageBytes` (4 MiB) before any handler runs.
    @Test func aMessageOverTheReceiveLimitIsRefusedBeforeItsHandler() async {
        let request = [UInt8](repeating: 0, count: 4 * 1024 * 1024 + 1)
        let outcome = await harness.call(ServiceHarness.getHistory, request: request)
        #expect(outcome.status.code == .resourceExhausted)
        #expect(outcome.responses.isEmpty)
    }
}
