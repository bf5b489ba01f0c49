import EventLoops
import ProtoCodec
import Synchronization
import Testing

@testable import GRPC
@testable import HTTPServer

/// A service that counts how often its methods were read; each reading's handler answers with its reading number
/// (as a health status number).
private final class ReadingService: GRPCService, Sendable {
    let readings = Atomic<Int>(0)

    var methods: [String: MethodHandler] {
        let reading = readings.add(1, ordering: .relaxed).newValue
        let answer = FramedMessage(HealthCheckResponse(status: .init(rawValue: Int32(reading))))
        return ["/test.Readings/Which": .unaryInline { _, _ in .success(answer) }]
    }
}

/// The answer bytes of an inline handler called with `request`.
private func answer(of handler: MethodHandler, request: [UInt8] = []) -> [UInt8]? {
    guard case .unaryInline(let body) = handler else { return nil }
    let context = ServerContext(method: "/test", metadata: [], deadline: nil)
    guard case .success(let message) = body(request, context) else { return nil }
    return message.bytes
}

/// What each loop calls is its own: a shared object's reference count written by every loop on every call is a
/// cache line bouncing between cores (bench/README.md, "Fleet shape").
@Suite struct LoopTablesTests {
    private static func router(_ service: ReadingService, loops: Int) -> Router {
        Router(
            services: [service], loops: loops, streamWriteHighWatermark: 65_536, maxReceiveMessageBytes: 1024,
            callGuard: nil,
            deadlines: DeadlinePolicy(defaultTimeout: .seconds(60), maximumTimeout: .seconds(60)))
    }

    @Test func eachLoopCallsTheHandlersOfItsOwnReading() async throws {
        let service = ReadingService()
        let router = Self.router(service, loops: 2)
        #expect(service.readings.load(ordering: .relaxed) == 2)
        #expect(router.paths == ["/test.Readings/Which"])
        let first = try await onLoop(index: 0) { answer(of: router.handlers[$0][0]) }
        let second = try await onLoop(index: 1) { answer(of: router.handlers[$0][0]) }
        #expect(first == FramedMessage(HealthCheckResponse(status: .init(rawValue: 1))).bytes)
        #expect(second == FramedMessage(HealthCheckResponse(status: .init(rawValue: 2))).bytes)
    }

    @Test func eachReadingOfTheHealthServiceFramesItsOwnAnswers() throws {
        let service = HealthService(board: HealthStatusBoard(services: []))
        let path = "/\(HealthService.name)/Check"
        let (one, two) = (try #require(service.methods[path]), try #require(service.methods[path]))
        let request = FramedMessage(HealthCheckRequest()).bytes.dropFirst(5)
        let answers = [one, one, two].map { answer(of: $0, request: Array(request)) }
        #expect(answers.allSatisfy { $0 == FramedMessage(HealthCheckResponse(status: .serving)).bytes })
        // Framed once per reading: the same storage for every call of one reading, another for another reading.
        let storages = [one, one, two].map { handler -> UnsafeRawPointer? in
            guard case .unaryInline(let body) = handler,
                case .success(let message) = body(
                    Array(request), ServerContext(method: path, metadata: [], deadline: nil))
            else { return nil }
            return message.bytes.withUnsafeBytes { $0.baseAddress }
        }
        #expect(storages[0] != nil && storages[0] == storages[1])
        #expect(storages[0] != storages[2])
    }

    @Test func eachLoopSendsItsOwnHeadAndOKTrailers() {
        let (one, two) = (
            CallRegistry(streamWriteHighWatermark: 1), CallRegistry(streamWriteHighWatermark: 1)
        )
        #expect(one.responseHead !== two.responseHead && one.okTrailers !== two.okTrailers)
        #expect(one.responseHead.fieldList.map(\.name) == [":status", "content-type"])
        #expect(one.okTrailers.fieldList.map(\.value) == ["0"])
        #expect(StatusTrailers.block(for: .ok, ok: one.okTrailers) === one.okTrailers)
        #expect(StatusTrailers.block(for: RPCStatus(.ok, "with a message"), ok: one.okTrailers) !== one.okTrailers)
    }
}
