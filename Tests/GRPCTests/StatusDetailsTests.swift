import ProtoCodec
import Testing

@testable import GRPC

@Suite struct StatusDetailsTests {
    @Test func detailsDecodeAsGoogleRPCStatusWithErrorInfoAndRetryInfo() throws {
        let status = RPCStatus(
            .resourceExhausted, "Apple rate limit",
            details: ErrorDetails(
                info: .init(
                    reason: "RATE_LIMIT_EXCEEDED", domain: "example.test", metadata: ["apple_error_code": "4290000"]),
                retryDelayMilliseconds: 2500))
        let bytes = try #require(StatusDetailsEncoding.encode(status))
        let decoded = try GoogleRPCStatus(serializedBytes: bytes)
        #expect(decoded.code == 8)
        #expect(decoded.message == "Apple rate limit")
        #expect(
            decoded.details.map(\.typeUrl) == [
                "type.googleapis.com/google.rpc.ErrorInfo", "type.googleapis.com/google.rpc.RetryInfo",
            ])
        let info = try ErrorInfo(serializedBytes: decoded.details[0].value)
        #expect(info.reason == "RATE_LIMIT_EXCEEDED")
        #expect(info.domain == "example.test")
        #expect(info.metadata == ["apple_error_code": "4290000"])
        let retry = try RetryInfo(serializedBytes: decoded.details[1].value)
        #expect(retry.retryDelay?.milliseconds == 2500)
    }

    @Test func badRequestCarriesEveryFieldViolationBesideErrorInfo() throws {
        let violations = [
            FieldViolation(field: "product_types", description: "must hold at most 100 values (got 101)"),
            FieldViolation(field: "transaction_id", description: "must be an App Store transaction id"),
        ]
        let status = RPCStatus(
            .invalidArgument, "Invalid request",
            details: ErrorDetails(
                info: .init(reason: "INVALID_ARGUMENT", domain: "example.test"), fieldViolations: violations))
        let decoded = try GoogleRPCStatus(serializedBytes: try #require(StatusDetailsEncoding.encode(status)))
        #expect(
            decoded.details.map(\.typeUrl) == [
                "type.googleapis.com/google.rpc.ErrorInfo", "type.googleapis.com/google.rpc.BadRequest",
            ])
        let badRequest = try BadRequest(serializedBytes: decoded.details[1].value)
        #expect(badRequest.fieldViolations.map(\.field) == ["product_types", "transaction_id"])
        #expect(badRequest.fieldViolations[0].description.contains("101"))
    }

    @Test func noDetailsNoTrailer() {
        #expect(StatusDetailsEncoding.encode(RPCStatus(.notFound, "x")) == nil)
    }
}

@Suite struct InfoMetadataTests {
    @Test func addedMetadataMakesAnErrorInfoInTheGivenDomainWhenThereIsNone() throws {
        let status = RPCStatus(.unavailable, "x").addingInfoMetadata("resume_token", "t", domain: "example.test")
        let info = try #require(status.details?.info)
        #expect(info.domain == "example.test")
        #expect(info.reason == "UNAVAILABLE")
        #expect(info.metadata == ["resume_token": "t"])
    }

    @Test func addedMetadataKeepsAnExistingErrorInfosDomain() throws {
        let status = RPCStatus(.unavailable, "x", details: ErrorDetails(info: .init(reason: "R", domain: "first.test")))
            .addingInfoMetadata("resume_token", "t", domain: "second.test")
        let info = try #require(status.details?.info)
        #expect(info.domain == "first.test")
        #expect(info.reason == "R")
        #expect(info.metadata == ["resume_token": "t"])
    }
}
