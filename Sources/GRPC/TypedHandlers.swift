import ProtoCodec

/// The messages of a server-streaming call, typed.
public struct ResponseStream<Message: ProtoMessage>: Sendable {
    let writer: any ResponseStreamWriter

    /// Sends one message; waits while the client is behind, throws once the call is over.
    public func send(_ message: Message) async throws(RPCStatus) {
        try await writer.send(FramedMessage(message))
    }

    /// Sends one message and makes `shutdownStatus` the status a server shutdown ends the call with from
    /// the moment the message is queued (see `ResponseStreamWriter.send(_:shutdownStatus:)`).
    public func send(_ message: Message, shutdownStatus: RPCStatus) async throws(RPCStatus) {
        try await writer.send(FramedMessage(message), shutdownStatus: shutdownStatus)
    }

    /// The status a server shutdown ends the call with, until the next `send(_:shutdownStatus:)`.
    public func setShutdownStatus(_ status: RPCStatus) async {
        await writer.setShutdownStatus(status)
    }
}

/// The messages of a client stream, typed; `next()` is nil after the client's END_STREAM.
///
/// One reader by construction: the value cannot be copied (`~Copyable`) and the handler it is given to owns
/// it (a `consuming` parameter), and it is not `Sendable`, so no other task can hold it either.
public struct RequestStream<Message: ProtoMessage>: ~Copyable {
    private var iterator: AsyncStream<[UInt8]>.Iterator
    private let context: ServerContext

    init(messages: AsyncStream<[UInt8]>, context: ServerContext) {
        self.iterator = messages.makeAsyncIterator()
        self.context = context
    }

    /// The next message; throws INVALID_ARGUMENT for bytes that are not a `Message`.
    public mutating func next() async throws(RPCStatus) -> Message? {
        guard let bytes = await iterator.next() else { return nil }
        return try MethodHandler.decode(Message.self, bytes, context)
    }
}

extension MethodHandler {
    /// A unary method run inline on the event loop (cheap, non-blocking work only). Inlinable, like the
    /// other unary adapters, so each method's decode, answer and encode are specialised for its message types
    /// (no generic copies of a large response, no dynamic cast for `AppNamingMessage`).
    @inlinable
    public static func unaryInline<Request: ProtoMessage, Response: ProtoMessage>(
        _ request: Request.Type, _ body: @escaping @Sendable (Request, ServerContext) -> Result<Response, RPCStatus>
    ) -> MethodHandler {
        unaryInline(Request.self, framed: { request, context in body(request, context).map { FramedMessage($0) } })
    }

    /// A unary method run inline whose answer is already framed (e.g. made once and handed out again, as the
    /// health board does).
    @inlinable
    public static func unaryInline<Request: ProtoMessage>(
        _ request: Request.Type,
        framed body: @escaping @Sendable (Request, ServerContext) -> Result<FramedMessage, RPCStatus>
    ) -> MethodHandler {
        .unaryInline { bytes, context in
            do throws(RPCStatus) {
                return body(try decode(Request.self, bytes, context), context)
            } catch {
                return .failure(error)
            }
        }
    }

    /// A unary method that starts on the event loop and either answers there or continues as a Swift task.
    @inlinable
    public static func unaryInlineOrTask<Request: ProtoMessage, Response: ProtoMessage>(
        _ request: Request.Type,
        _ body: @escaping @Sendable (Request, ServerContext) -> TypedInlineOrTask<Response>
    ) -> MethodHandler {
        .unaryInlineOrTask { bytes, context in
            let message: Request
            do throws(RPCStatus) {
                message = try decode(Request.self, bytes, context)
            } catch {
                return .done(.failure(error))
            }
            let outcome = body(message, context)
            switch consume outcome {
            case .done(.success(let response)): return .done(.success(FramedMessage(response)))
            case .done(.failure(let status)): return .done(.failure(status))
            case .task(let rest): return .task { await rest().map { FramedMessage($0) } }
            }
        }
    }

    /// A unary method run as a Swift task. Its body throws its own typed error; the call ends with that
    /// error's `rpcStatus`.
    @inlinable
    public static func unary<Request: ProtoMessage, Response: ProtoMessage, Failure: RPCStatusConvertible>(
        _ request: Request.Type,
        _ body: @escaping @Sendable (Request, ServerContext) async throws(Failure) -> Response
    ) -> MethodHandler {
        unary(
            Request.self,
            framed: { request, context async throws(Failure) -> FramedMessage in
                FramedMessage(try await body(request, context))
            })
    }

    /// A unary method run as a Swift task whose answer comes framed (e.g. an answer kept from an earlier call
    /// and handed out again while it still holds). Its body throws its own typed error, as `unary`'s does.
    @inlinable
    public static func unary<Request: ProtoMessage, Failure: RPCStatusConvertible>(
        _ request: Request.Type,
        framed body: @escaping @Sendable (Request, ServerContext) async throws(Failure) -> FramedMessage
    ) -> MethodHandler {
        .unary { bytes, context throws(RPCStatus) in
            let message = try decode(Request.self, bytes, context)
            do throws(Failure) {
                return try await body(message, context)
            } catch {
                throw error.rpcStatus
            }
        }
    }

    /// A server-streaming method run as a Swift task.
    public static func serverStreaming<Request: ProtoMessage, Response: ProtoMessage>(
        _ request: Request.Type, _ response: Response.Type,
        _ body: @escaping @Sendable (Request, ServerContext, ResponseStream<Response>) async throws(RPCStatus) -> Void
    ) -> MethodHandler {
        .serverStreaming { bytes, context, writer throws(RPCStatus) in
            try await body(try decode(Request.self, bytes, context), context, ResponseStream(writer: writer))
        }
    }

    /// A bidirectional-streaming method run as a Swift task.
    public static func bidiStreaming<Request: ProtoMessage, Response: ProtoMessage>(
        _ request: Request.Type, _ response: Response.Type,
        _ body:
            @escaping @Sendable (consuming RequestStream<Request>, ServerContext, ResponseStream<Response>)
            async throws(RPCStatus) -> Void
    ) -> MethodHandler {
        .bidiStreaming { messages, context, writer throws(RPCStatus) in
            try await body(RequestStream(messages: messages, context: context), context, ResponseStream(writer: writer))
        }
    }

    @usableFromInline
    static func decode<Request: ProtoMessage>(
        _ type: Request.Type, _ bytes: [UInt8], _ context: ServerContext
    ) throws(RPCStatus) -> Request {
        let message: Request
        do {
            message = try Request(serializedBytes: bytes)
        } catch {
            throw RPCStatus(
                .invalidArgument,
                "the request of \(context.method) is not a valid \(Request.self) protobuf message (\(bytes.count) bytes)"
            )
        }
        // The one per-app authorization point: every typed handler decodes here before its body runs.
        if let app = message.namedApp, let refusal = context.refusal(forApp: app) {
            throw refusal
        }
        return message
    }
}

/// What a typed `unaryInlineOrTask` handler decided on the event loop.
public enum TypedInlineOrTask<Response: ProtoMessage>: Sendable {
    /// The answer, computed inline.
    case done(Result<Response, RPCStatus>)
    /// The work that remains, to run as a Swift task.
    case task(@Sendable () async -> Result<Response, RPCStatus>)
}
