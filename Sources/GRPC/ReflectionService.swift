import ProtoCodec

/// gRPC server reflection (grpc/grpc doc/server-reflection.md) under both names clients use:
/// `grpc.reflection.v1.ServerReflection` and `grpc.reflection.v1alpha.ServerReflection` (same messages).
/// grpcurl and evans try v1 first and some tools speak only one, so both are served (gRFC A15).
public struct ReflectionService: GRPCService {
    /// The names this service is served under.
    static let names = ["grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]

    /// The services listed (fully qualified names): those given, and this one.
    let listed: [String]

    /// Reflection over `services` (the server's other services) and itself: each is listed under the names
    /// its method paths give.
    public init(listing services: [any GRPCService]) {
        listed = Array(Set(services.flatMap(\.serviceNames) + Self.names))
    }

    /// Open: tools such as grpcurl discover the API before they hold credentials.
    public var isOpen: Bool { true }

    public var methods: [String: MethodHandler] {
        let handler = MethodHandler.bidiStreaming(ServerReflectionRequest.self, ServerReflectionResponse.self) {
            [listed] requests, _, responses throws(RPCStatus) in
            var requests = requests  // the handler's own, to read from
            while let request = try await requests.next() {
                try await responses.send(Self.answer(request, serviceNames: listed))
            }
        }
        return Dictionary(uniqueKeysWithValues: Self.names.map { ("/\($0)/ServerReflectionInfo", handler) })
    }

    /// Answers one request; unknown files and symbols get an ErrorResponse (NOT_FOUND), not a call error.
    static func answer(_ request: ServerReflectionRequest, serviceNames: [String]) -> ServerReflectionResponse {
        var response = ServerReflectionResponse()
        response.validHost = request.host
        response.originalRequest = request
        switch request.messageRequest {
        case .listServices?:
            response.messageResponse = .listServicesResponse(
                ListServiceResponse(service: serviceNames.sorted().map { ServiceResponse(name: $0) }))
        case .fileByFilename(let name)?:
            response.messageResponse = files(startingAt: ProtoFileDescriptor.file(named: name), missing: "file \(name)")
        case .fileContainingSymbol(let symbol)?:
            response.messageResponse = files(
                startingAt: ProtoFileDescriptor.file(containingSymbol: symbol), missing: "symbol \(symbol)")
        case .fileContainingExtension(let extensionRequest)?:
            response.messageResponse = .errorResponse(
                ErrorResponse(
                    errorCode: Int32(StatusCode.notFound.rawValue),
                    errorMessage:
                        "no extension \(extensionRequest.extensionNumber) of \(extensionRequest.containingType)"))
        case .allExtensionNumbersOfType(let type)?:
            if ProtoFileDescriptor.file(containingSymbol: type) != nil {
                response.messageResponse = .allExtensionNumbersResponse(ExtensionNumberResponse(baseTypeName: type))
            } else {
                response.messageResponse = .errorResponse(
                    ErrorResponse(
                        errorCode: Int32(StatusCode.notFound.rawValue), errorMessage: "unknown type \(type)"))
            }
        case nil:
            response.messageResponse = .errorResponse(
                ErrorResponse(
                    errorCode: Int32(StatusCode.invalidArgument.rawValue), errorMessage: "the request asks nothing"))
        }
        return response
    }

    /// The file and, transitively, every file it imports: clients need them all to build the descriptor.
    private static func files(startingAt file: ProtoFileDescriptor?, missing: String)
        -> ServerReflectionResponse.MessageResponse
    {
        guard let file else {
            return .errorResponse(
                ErrorResponse(
                    errorCode: Int32(StatusCode.notFound.rawValue), errorMessage: "\(missing) not found"))
        }
        var ordered: [ProtoFileDescriptor] = []
        var seen: Set<String> = []
        var pending = [file]
        while let next = pending.popLast() {
            guard seen.insert(next.name).inserted else { continue }
            ordered.append(next)
            pending.append(contentsOf: next.dependencies.compactMap { ProtoFileDescriptor.file(named: $0) })
        }
        return .fileDescriptorResponse(FileDescriptorResponse(fileDescriptorProto: ordered.map(\.serializedBytes)))
    }
}
