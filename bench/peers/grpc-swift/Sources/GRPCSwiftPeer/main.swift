import GRPCCore
import GRPCNIOTransportHTTP2

/// `grpc-swift-peer PORT`: serves `grpc.health.v1.Health/Check` on 127.0.0.1:PORT (h2c) with grpc-swift-2, the same
/// call bench/transport-peers.sh sends the gateway. Messages stay raw bytes (no swift-protobuf, whose plugin build
/// takes ~10 minutes): the answer is the encoded `HealthCheckResponse{status: SERVING}`, `08 01`.
struct RawBytes: MessageSerializer, MessageDeserializer {
    typealias Message = [UInt8]
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ bytes: Bytes) throws -> [UInt8] {
        bytes.withUnsafeBytes { Array($0) }
    }
}

struct HealthCheckPeer: RegistrableRPCService {
    static let check = MethodDescriptor(fullyQualifiedService: "grpc.health.v1.Health", method: "Check")
    static let serving: [UInt8] = [0x08, 0x01]

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        router.registerHandler(forMethod: Self.check, deserializer: RawBytes(), serializer: RawBytes()) {
            request, _ in
            // Drain the one request message, then answer, as a unary handler does.
            for try await _ in request.messages {}
            return StreamingServerResponse(single: ServerResponse(message: Self.serving))
        }
    }
}

let port = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 30161 : 30161
let server = GRPCServer(
    transport: .http2NIOPosix(
        address: .ipv4(host: "127.0.0.1", port: port), transportSecurity: .plaintext,
        config: .defaults { $0.rpc.maxRequestPayloadSize = 4 << 20 }),
    services: [HealthCheckPeer()])
print("grpc-swift-peer listening on 127.0.0.1:\(port)")
try await server.serve()
