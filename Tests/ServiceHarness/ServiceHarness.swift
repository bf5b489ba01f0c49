import Configuration
import Dispatch
import Foundation
import GRPC
import GatewayApp
import GatewayFoundation
import HTTPServer
import ProtoCodec
import Services
import Simulator

/// The gateway's RPCs driven the way the server drives them — request bytes → decode → handler → response
/// bytes — with the built-in App Store simulator as Apple on a loopback port and the service built as
/// `GatewayApp` builds it. Used by the handler-level libFuzzer targets (fuzz/) and by ServicesTests, which
/// replay the same inputs.
public final class ServiceHarness: Sendable {
    /// The paths of the three RPCs with their own fuzz targets (`ServiceHarness+API.swift` has the rest).
    public static let getHistory = "/appstore.gateway.v1.AppStoreGateway/GetHistory"
    public static let streamNotifications = "/appstore.gateway.v1.AppStoreGateway/StreamNotifications"
    public static let verifyJWS = "/appstore.gateway.v1.AppStoreGateway/VerifyJWS"

    /// What one call produced.
    public struct Outcome: Sendable {
        /// The final status (OK for a unary success).
        public var status: RPCStatus
        /// The serialized response messages, in order.
        public var responses: [[UInt8]]
    }

    /// Most stream messages read before the harness cancels a stream (a caller that stops reading).
    public static let maxStreamMessages = 8

    /// The simulator playing Apple.
    public let simulator: SimulatorServer
    private let methods: [String: MethodHandler]

    /// One harness per process: starting a simulator and loading the keys takes a moment.
    public static let shared: ServiceHarness = {
        do {
            return try ServiceHarness()
        } catch {
            preconditionFailure("the service harness cannot start: \(error)")
        }
    }()

    /// A simulator in a fresh temporary state directory and the gateway's service configured for it, with
    /// rate-limit waits and retries off so every call ends quickly.
    public init() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("service-harness-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let state = try SimulatorState.openOrCreate(directory: directory, seed: 12)
        simulator = try SimulatorServer(state: state, listen: ListenAddress(host: "127.0.0.1", port: 0))
        let path = try simulator.writeGatewayConfiguration()
        var configuration = try GatewayConfiguration.load(yaml: try String(contentsOfFile: path, encoding: .utf8))
        configuration.resolvePaths(relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        configuration.verification.trustBuiltInAppleRoot = true
        configuration.rateLimits.maxWait = .zero
        configuration.retries.maxAttempts = 1
        methods = try GatewayComposition.service(configuration).methods
    }

    /// Runs `method` on the serialized `request` as the server would, with a 2 s deadline; streams are
    /// cancelled after `maxStreamMessages` messages. Tests await this one: blocking a thread of Swift's
    /// cooperative pool (two on a 2-core machine) while the handler needs one can starve every task.
    public func call(_ method: String, request: [UInt8]) async -> Outcome {
        guard let handler = methods[method] else {
            return Outcome(status: RPCStatus(.unimplemented, "no such method"), responses: [])
        }
        let context = ServerContext(
            method: method, metadata: [], deadline: .now() + .seconds(2))
        switch handler {
        case .unaryInline(let body):
            switch body(request, context) {
            case .success(let response): return Outcome(status: .ok, responses: [unframed(response)])
            case .failure(let status): return Outcome(status: status, responses: [])
            }
        case .unaryInlineOrTask(let body):
            switch body(request, context) {
            case .done(.success(let response)): return Outcome(status: .ok, responses: [unframed(response)])
            case .done(.failure(let status)): return Outcome(status: status, responses: [])
            case .task(let rest):
                switch await rest() {
                case .success(let response): return Outcome(status: .ok, responses: [unframed(response)])
                case .failure(let status): return Outcome(status: status, responses: [])
                }
            }
        case .unary(let body):
            do throws(RPCStatus) {
                return Outcome(status: .ok, responses: [unframed(try await body(request, context))])
            } catch {
                return Outcome(status: error, responses: [])
            }
        case .serverStreaming(let body):
            let writer = CollectingWriter()
            do throws(RPCStatus) {
                try await body(request, context, writer)
                return Outcome(status: .ok, responses: writer.messages)
            } catch {
                return Outcome(status: error, responses: writer.messages)
            }
        case .bidiStreaming:
            return Outcome(status: RPCStatus(.unimplemented, "no bidirectional method here"), responses: [])
        }
    }

    /// `call` for a synchronous caller (the libFuzzer targets, on their own thread): waits at most 30 s; a
    /// handler still running then is a hang, reported as a failure (a fuzz finding).
    public func call(_ method: String, request: [UInt8]) -> Outcome {
        Self.blocking { await self.call(method, request: request) }
    }

    /// Runs `body` as a task and blocks this thread until it ends (at most 30 s). Never from a task.
    static func blocking<Result: Sendable>(_ body: @escaping @Sendable () async -> Result) -> Result {
        let result = Lock<Result?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome = await body()
            result.withLock { $0 = outcome }
            done.signal()
        }
        guard done.wait(timeout: .now() + 30) == .success, let outcome = result.withLock({ $0 }) else {
            preconditionFailure("a handler did not finish within 30 s of a 2 s deadline")
        }
        return outcome
    }
}

/// The message a handler answered, after checking its gRPC prefix (uncompressed, its length): every test
/// through the harness checks the framing the handler did.
func unframed(_ message: FramedMessage) -> [UInt8] {
    let bytes = message.bytes
    precondition(bytes.count >= 5 && bytes[0] == 0, "a message without its gRPC prefix")
    let length = bytes[1..<5].reduce(0) { $0 << 8 | Int($1) }
    precondition(length == bytes.count - 5, "the prefix announces \(length) bytes, the message has \(bytes.count - 5)")
    return Array(message.payload)
}

/// A stream writer that keeps what is sent and cancels like a caller that stops reading.
private final class CollectingWriter: ResponseStreamWriter {
    private let sent = Lock<[[UInt8]]>([])
    var messages: [[UInt8]] { sent.withLock { $0 } }

    func send(_ message: FramedMessage) async throws(RPCStatus) {
        let count = sent.withLock { sent in
            sent.append(unframed(message))
            return sent.count
        }
        if count >= ServiceHarness.maxStreamMessages { throw RPCStatus(.cancelled, "the harness stopped reading") }
    }

    func send(_ message: FramedMessage, shutdownStatus: RPCStatus) async throws(RPCStatus) {
        try await send(message)
    }

    func setShutdownStatus(_ status: RPCStatus) async {}
}
