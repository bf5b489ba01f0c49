import GatewayFoundation
import ProtoCodec
import Testing

@testable import GRPC

@Suite struct TrailerBoundsTests {
    @Test func shortStatusesAreUnchanged() {
        let status = RPCStatus(
            .notFound, "No app named \"x\"",
            details: ErrorDetails(info: .init(reason: "UNKNOWN_APP", domain: "example.test", metadata: ["app": "x"])))
        #expect(TrailerBounds.bounded(status) == status)
    }

    @Test func aHugeMessageIsCutWithinTheLimitOnACharacterBoundary() {
        for unit in ["a", "%", "é", "🙂"] {
            let status = RPCStatus(.invalidArgument, String(repeating: unit, count: 100_000))
            let fields = StatusTrailers.fields(for: status)
            let message = fields.first { $0.name == "grpc-message" }!.value
            #expect(message.utf8.count <= TrailerBounds.maxMessageBytes)
            #expect(message.hasSuffix("..."))
            let decoded = StatusMessageEncoding.decode(message)
            #expect(decoded.dropLast(3).allSatisfy { String($0) == unit })
        }
    }

    @Test func hugeDetailsKeepTheirReasonAndLoseTheEcho() throws {
        let echo = String(repeating: "a", count: 100_000)
        let status = RPCStatus(
            .notFound, "No app named \(echo)",
            details: ErrorDetails(
                info: .init(reason: "UNKNOWN_APP", domain: "example.test", metadata: ["app": echo]),
                retryDelayMilliseconds: 5))
        let fields = StatusTrailers.fields(for: status)
        let details = try #require(fields.first { $0.name == "grpc-status-details-bin" }?.value)
        #expect(details.utf8.count <= TrailerBounds.maxDetailsBytes)
        let decoded = try GoogleRPCStatus(
            serializedBytes: try #require(Base64.decode(details, variant: .standardUnpadded)))
        #expect(decoded.code == 5)
        let info = try ErrorInfo(serializedBytes: decoded.details[0].value)
        #expect(info.reason == "UNKNOWN_APP")
        #expect((info.metadata["app"] ?? "").utf8.count <= 300)
        #expect(decoded.details.count == 2)  // RetryInfo kept
    }

    @Test func manyMetadataEntriesAreDroppedWhenClippingIsNotEnough() throws {
        var metadata: [String: String] = [:]
        for index in 0..<200 { metadata["key\(index)"] = String(repeating: "v", count: 250) }
        let status = RPCStatus(
            .internal, "x", details: ErrorDetails(info: .init(reason: "R", domain: "example.test", metadata: metadata)))
        let bounded = TrailerBounds.bounded(status)
        #expect(bounded.details?.info?.reason == "R")
        let encoded = try #require(StatusDetailsEncoding.encode(bounded))
        #expect((encoded.count + 2) / 3 * 4 <= TrailerBounds.maxDetailsBytes)
    }
}
