import Foundation
import GRPC
import GatewayFoundation
import ProtoCodec

/// How fuzz inputs become calls, and what every answer must satisfy: shared by the libFuzzer targets and
/// the tests that replay their corpus, so both exercise the same thing.
extension ServiceHarness {
    /// A genuine Apple JWS header (ES256, Apple's real x5c chain), so a payload input reaches chain validation.
    package static let genuineHeader: String = {
        var root = #filePath
        for _ in 0..<3 { root = String(root[..<(root.lastIndex(of: "/") ?? root.startIndex)]) }
        let path = root + "/Tests/SignedDataTests/Fixtures/notification-Production-1.jws"
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return String(text.prefix { $0 != "." })
    }()

    /// A VerifyJWS request from a fuzz input: an input starting with `{` is a JWS payload (JSON) sent under
    /// a genuine header with a zero signature; anything else is the serialized request itself.
    package static func verifyJWSRequest(fromFuzzInput input: [UInt8]) -> [UInt8] {
        guard input.first == UInt8(ascii: "{") else { return input }
        var request = VerifyJWSRequest()
        request.jws = genuineHeader + "." + Base64URL.encode(input) + "." + String(repeating: "A", count: 86)
        return request.serializedBytes()
    }

    /// Runs a fuzz input against `method` and checks the answer: no INTERNAL or UNKNOWN status (a bug, or an
    /// unbounded request the contract should have refused), and an OK answer decodes as the method's response.
    @discardableResult
    package func fuzz(_ method: String, input: [UInt8]) -> Outcome {
        Self.blocking { await self.fuzz(method, input: input) }
    }

    /// `fuzz(_:input:)` for tests, awaited rather than blocking a thread.
    @discardableResult
    package func fuzz(_ method: String, input: [UInt8]) async -> Outcome {
        let request = method == Self.verifyJWS ? Self.verifyJWSRequest(fromFuzzInput: input) : input
        let outcome = await call(method, request: request)
        precondition(
            outcome.status.code != .internal && outcome.status.code != .unknown,
            "\(method) answered \(outcome.status) to a \(input.count)-byte input")
        for response in outcome.responses {
            let decodes: Bool
            switch method {
            case Self.getHistory: decodes = (try? GetHistoryResponse(serializedBytes: response)) != nil
            case Self.streamNotifications: decodes = (try? NotificationEvent(serializedBytes: response)) != nil
            default: decodes = (try? VerifyJWSResponse(serializedBytes: response)) != nil
            }
            precondition(decodes, "\(method) sent a response that does not decode")
        }
        return outcome
    }
}
