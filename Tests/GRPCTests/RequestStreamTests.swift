import ProtoCodec
import Testing

@testable import GRPC

@Suite struct RequestStreamTests {
    private static func stream(_ messages: [[UInt8]]) -> RequestStream<HealthCheckRequest> {
        let (bytes, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        for message in messages { continuation.yield(message) }
        continuation.finish()
        return RequestStream(messages: bytes, context: ServerContext(method: "/t.T/M", metadata: [], deadline: nil))
    }

    @Test func readsEachMessageTypedThenEnds() async throws {
        var requests = Self.stream([
            HealthCheckRequest(service: "a").serializedBytes(), HealthCheckRequest(service: "b").serializedBytes(),
        ])
        #expect(try await requests.next()?.service == "a")
        #expect(try await requests.next()?.service == "b")
        #expect(try await requests.next() == nil)
    }

    @Test func bytesThatAreNotTheMessageEndWithInvalidArgument() async {
        var requests = Self.stream([[0xFF, 0xFF, 0xFF]])
        do {
            _ = try await requests.next()
            Issue.record("bytes that are not a HealthCheckRequest were read as one")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }
}
