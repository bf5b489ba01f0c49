import AppStoreDomain
import GRPC
import GatewayFoundation
import Services
import Testing

/// How the Retention Messaging API's 26 error codes reach a caller: by the HTTP status in their first three digits,
/// each with Apple's name as the ErrorInfo reason.
@Suite struct RetentionMessagingStatusTests {
    private func status(_ code: Int64) -> RPCStatus {
        let apple = AppleErrorCode(rawValue: code)
        return GatewayError.forApple(
            AppleFailure(
                httpStatus: apple.httpStatus ?? 500, code: apple, appleMessage: "said so", environment: .sandbox,
                app: "example", appleRequestID: "req-1"),
            endpoint: .uploadMessage, retryAfter: nil, now: WallTime(millisecondsSince1970: 0)
        ).rpcStatus
    }

    @Test func everyCodeMapsByItsHTTPStatusWithApplesName() {
        let expected: [Int: StatusCode] = [
            400: .invalidArgument, 403: .failedPrecondition, 404: .notFound, 409: .alreadyExists,
        ]
        #expect(AppleErrorCode.retentionMessagingCodes.count == 26)
        for (code, name) in AppleErrorCode.retentionMessagingCodes {
            let status = status(code)
            #expect(status.code == expected[Int(code / 10_000)], "\(code)")
            #expect(status.details?.info?.reason == AppleErrorCode(rawValue: code).reason)
            #expect(status.details?.info?.metadata["apple_error_name"] == name)
            #expect(status.details?.info?.metadata["apple_error_code"] == String(code))
        }
    }

    @Test func examplesCallersWillMeet() {
        #expect(status(4_090_000).details?.info?.reason == "IMAGE_ALREADY_EXISTS")
        #expect(status(4_030_019).code == .failedPrecondition)
        #expect(status(4_030_019).details?.info?.reason == "IMAGE_IN_USE")
        #expect(status(4_040_021).details?.info?.reason == "REALTIME_URL_NOT_FOUND")
        #expect(status(4_000_161).message.contains("InvalidImage (4000161)"))
    }
}
