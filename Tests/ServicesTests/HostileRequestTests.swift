import GRPC
import ProtoCodec
import ServiceHarness
import TestSupport
import Testing

/// The handler-level fuzz corpus and the hostile inputs of issue 12, replayed through the three RPCs as the
/// server runs them (request bytes → handler → response bytes) with the simulator as Apple.
@Suite(.serialized) struct HostileRequestTests {
    private let harness = ServiceHarness.shared

    @Test(arguments: ["verify-handler", "history-handler", "notifications-handler"])
    func fuzzInputsReplayWithoutTrap(target: String) async {
        let method =
            switch target {
            case "verify-handler": ServiceHarness.verifyJWS
            case "history-handler": ServiceHarness.getHistory
            default: ServiceHarness.streamNotifications
            }
        let inputs = FuzzInputs.of(target)
        #expect(inputs.count >= 5)
        for input in inputs { await harness.fuzz(method, input: input) }
    }

    @Test func signedDateAtInt64MaxIsAMalformedVerdictNotACrash() async throws {
        let payload = Array(#"{"transactionId":"1","signedDate":9223372036854775807}"#.utf8)
        let outcome = await harness.fuzz(ServiceHarness.verifyJWS, input: payload)
        #expect(outcome.status.code == .ok)
        let response = try VerifyJWSResponse(serializedBytes: try #require(outcome.responses.first))
        #expect(response.status == .malformed)
        #expect(response.message.contains("signedDate"))
        #expect(response.signedDate == nil)
    }

    @Test func aMillionProductTypesIsRefusedWithAFieldViolation() async {
        var request = GetHistoryRequest()
        request.transactionId = "1"
        request.productTypes = Array(repeating: .consumable, count: 1_000_000)
        let outcome = await harness.call(ServiceHarness.getHistory, request: request.serializedBytes())
        #expect(outcome.status.code == .invalidArgument)
        #expect(outcome.status.details?.fieldViolations.map(\.field) == ["product_types"])
    }

    @Test(arguments: [".", "..", "%2e%2e", "1/2", "123456789012345678901", "١٢٣"])
    func nonDigitTransactionIDsAreRefused(id: String) async {
        var request = GetHistoryRequest()
        request.transactionId = id
        let history = await harness.call(ServiceHarness.getHistory, request: request.serializedBytes())
        #expect(history.status.code == .invalidArgument)
        #expect(history.status.details?.fieldViolations.first?.field == "transaction_id")
        var stream = StreamNotificationsRequest()
        stream.transactionId = id
        let notifications = await harness.call(ServiceHarness.streamNotifications, request: stream.serializedBytes())
        #expect(notifications.status.code == .invalidArgument)
        #expect(notifications.status.details?.fieldViolations.contains { $0.field == "transaction_id" } == true)
    }

    @Test func everyViolationOfOneRequestIsListed() async {
        var request = GetHistoryRequest()
        request.transactionId = ".."
        request.app = String(repeating: "a", count: 300)
        request.productIds = Array(repeating: "p", count: 101)
        let outcome = await harness.call(ServiceHarness.getHistory, request: request.serializedBytes())
        #expect(outcome.status.code == .invalidArgument)
        let fields = Set(outcome.status.details?.fieldViolations.map(\.field) ?? [])
        #expect(fields == ["app", "transaction_id", "product_ids"])
    }

    @Test func aHundredValuesAreStillAccepted() async {
        var request = GetHistoryRequest()
        request.transactionId = "1"
        request.productIds = (0..<100).map { "product.\($0)" }
        let outcome = await harness.call(ServiceHarness.getHistory, request: request.serializedBytes())
        // Past the contract: the simulator does not know id 1.
        #expect(outcome.status.code == .notFound)
    }
}
