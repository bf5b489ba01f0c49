import EventLoops
import GatewayFoundation
import HTTPServer
import Metrics
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A service: a set of methods by full path ("/package.Service/Method"), and whether its calls need the
/// server's `CallGuard`.
public protocol GRPCService: Sendable {
    /// The methods this service serves. The server reads it once per event loop, and each loop calls the
    /// handlers of its own reading: a computed property (new closures each time) gives every loop closure
    /// contexts of its own, so no loop writes another's reference counts on every call.
    var methods: [String: MethodHandler] { get }
    /// True for a service every caller may use (health, reflection): its calls skip the server's `CallGuard`.
    /// False by default, so a service is guarded unless it says otherwise.
    var isOpen: Bool { get }
}

extension GRPCService {
    /// Guarded.
    public var isOpen: Bool { false }

    /// The fully qualified names of the services whose methods this value serves (what reflection lists), read
    /// from the method paths, sorted.
    public var serviceNames: [String] {
        Set(methods.keys.compactMap(Self.serviceName(ofPath:))).sorted()
    }

    /// "package.Service" of "/package.Service/Method"; nil for a path not of that form.
    static func serviceName(ofPath path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else { return nil }
        return String(parts[1])
    }
}

/// The gRPC server: routes HTTP/2 streams to method handlers on its event loops.
public final class GRPCServer: Sendable {
    /// The HTTP/2 server underneath.
    public let http2: HTTP2Server
    private let router: Router
    private let configuration: GRPCServerConfiguration
    private let life = ServerLifeSignal()

    /// A server of `services` with `configuration`'s limits and timers. Every call counts in `metrics` (a registry
    /// of its own, read by nobody, by default), gets a line in `accessLog` (nil: none; health checks never do)
    /// and a SERVER span for `tracer` (nil: none); `callGuard` (nil = anyone) is asked before any handler runs,
    /// for every call of a service that is not open (`GRPCService.isOpen`: health and reflection are); `tls` puts
    /// TLS on the port (ALPN h2; client certificates when its context asks for them), nil = h2c; `onGoaway`
    /// hears every GOAWAY a connection sends, on its loop.
    public init(
        configuration: GRPCServerConfiguration, services: [any GRPCService],
        metrics: RPCMetrics = RPCMetrics(registry: MetricsRegistry()), accessLog: (any AccessLog)? = nil,
        tracer: (any Tracer)? = nil, callGuard: (any CallGuard)? = nil, tls: TLSContext? = nil,
        onGoaway: (@Sendable (SentGoaway) -> Void)? = nil
    ) throws(SystemError) {
        let threads = configuration.threads > 0 ? configuration.threads : Self.coreCount()
        let router = Router(
            configuration: configuration, loops: threads, services: services, metrics: metrics,
            accessLog: accessLog, tracer: tracer, callGuard: callGuard)
        self.router = router
        self.configuration = configuration
        self.http2 = try HTTP2Server(
            address: configuration.listen, threads: threads, configuration: configuration.http2,
            transport: tls.map { .tls($0) } ?? .cleartextHTTP2, responder: router, onGoaway: onGoaway)
    }

    /// The bound port.
    public var port: UInt16 { http2.port }

    /// Starts serving (once; a second call, or one after a shutdown, does nothing).
    public func start() {
        if life.update({ $0.start() }) { http2.start() }
    }

    /// Starts serving and returns when a graceful shutdown begun with `beginGracefulShutdown` (from any thread,
    /// e.g. a signal handler's) is over: every connection closed, or the grace period ended the calls still
    /// running. Waits on the server's state; never polls.
    @discardableResult
    public func serve() -> ShutdownOutcome {
        start()
        life.wait { !($0.state == .serving) }
        return drainOrAwait()
    }

    /// Asks the server to shut down gracefully within `grace` (nil = `shutdownGrace` of its configuration) and
    /// returns at once; `serve()` (or `shutdown`) does the shutdown. Only the first request counts.
    public func beginGracefulShutdown(grace: Duration? = nil) {
        _ = life.update { $0.requestShutdown(grace: grace) }
    }

    /// Checks every open call again with the call guard (`CallGuard.recheck`), after its policy changed, and ends
    /// those it no longer allows with the status it gives (PERMISSION_DENIED for a caller whose app or
    /// permission was taken away). Runs on each loop; `ended` is called once per loop with the calls it ended.
    public func recheckOpenCalls(ended: @escaping @Sendable (Int) -> Void = { _ in }) {
        router.finishRefusedCalls(on: http2.eventLoops, ended: ended)
    }

    /// Graceful shutdown: GOAWAY (two-step) on every connection, in-flight calls run until they finish or
    /// the grace period ends, then the rest end with UNAVAILABLE and connections close. Blocks until done,
    /// waiting on the server's state (`GracefulShutdown`): it returns as soon as the last connection closes.
    /// When `serve()` runs on another thread, this asks it to shut down and waits for its outcome.
    @discardableResult
    public func shutdown(grace: Duration? = nil) -> ShutdownOutcome {
        beginGracefulShutdown(grace: grace)
        return drainOrAwait()
    }

    /// Drains on this thread when nobody else does; otherwise waits for the thread that does.
    private func drainOrAwait() -> ShutdownOutcome {
        if let grace = life.update({ $0.beginDraining() }) {
            let outcome = drain(grace: grace)
            life.update { $0.finish(outcome) }
            return outcome
        }
        life.wait { $0.outcome != nil }
        return life.update { $0.outcome } ?? .drained
    }

    private func drain(grace: Duration?) -> ShutdownOutcome {
        http2.beginGracefulShutdown()
        var sequence = GracefulShutdown(grace: grace ?? configuration.shutdownGrace, now: .now())
        while true {
            switch sequence.next(heldConnections: http2.heldConnections, now: .now()) {
            case .wait(let deadline):
                _ = http2.waitUntilIdle(deadline: deadline)
            case .endCalls:
                let unavailable = RPCStatus(
                    .unavailable, "the server is shutting down; retry the call (another replica will serve it)")
                router.finishAllCalls(unavailable, on: http2.eventLoops)
            case .stop(let outcome):
                http2.stop()
                return outcome
            }
        }
    }

    private static func coreCount() -> Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}

/// Per-loop values, indexed by `EventLoop.index` (made before the loops exist); each element is only
/// opened on its own loop, and that is checked.
final class LoopLocal<Value>: @unchecked Sendable {
    private let values: [Value]
    init(_ values: [Value]) { self.values = values }

    /// The value of `loop`; only on that loop.
    subscript(loop: EventLoop) -> Value {
        precondition(loop.inEventLoop, "a loop-local value was used off its event loop")
        return values[loop.index]
    }

    /// Element `index` of `loop`'s array, read in place (the array itself is not copied out and retained).
    subscript<Element>(loop: EventLoop, index: Int) -> Element where Value == [Element] {
        precondition(loop.inEventLoop, "a loop-local value was used off its event loop")
        return values[loop.index][index]
    }

    /// Runs `body` with each loop's value on that loop.
    func forEach(on loops: [EventLoop], _ body: @escaping @Sendable (Value) -> Void) {
        for loop in loops { loop.execute { body(self[loop]) } }
    }
}

/// Routes each new stream: checks the request head and starts a `ServerCall` for a known method.
struct Router: HTTP2Responder {
    /// The served paths, and beside each its handler: a request head names a known path by its index in
    /// the intern table (made from these paths first), so routing hashes nothing.
    let paths: [String]
    /// Each loop's handlers, by path index: every loop reads the services' methods once for itself, so a
    /// handler's closure context (retained and released several times a call) is written by one core only.
    let handlers: LoopLocal<[MethodHandler]>
    /// Each loop's recorder of each path (metrics, access log, span), resolved once.
    let recorders: LoopLocal<[RPCRecorder]>
    /// Each loop's recorder of every unregistered path (the `unknown` series), resolved once.
    let unknownRecorders: LoopLocal<RPCRecorder>
    /// Whether each path's service is open to every caller (`GRPCService.isOpen`), decided once.
    let open: [Bool]
    let registries: LoopLocal<CallRegistry>
    let maxReceiveMessageBytes: Int
    /// The server's guard, through a handle per loop (nil: no guard).
    let callGuards: LoopLocal<LoopCallGuard>?
    let deadlines: DeadlinePolicy

    /// A served method: its handler, and whether its service is open to every caller.
    struct Method {
        var handler: MethodHandler
        var open: Bool
    }

    /// Every method of `services` by path, each open when its service is (a later service's method replaces an
    /// earlier one's of the same path).
    static func methods(of services: [any GRPCService]) -> [String: Method] {
        var methods: [String: Method] = [:]
        for service in services {
            for (path, handler) in service.methods { methods[path] = Method(handler: handler, open: service.isOpen) }
        }
        return methods
    }

    /// A router for `loops` event loops: each loop gets its own reading of the services' methods (the readings
    /// have the same paths), its own recorders and its own call registry. The served methods are registered in
    /// `metrics`, each with its own series.
    init(
        services: [any GRPCService], loops: Int, streamWriteHighWatermark: Int, maxReceiveMessageBytes: Int,
        metrics: RPCMetrics = RPCMetrics(registry: MetricsRegistry()), accessLog: (any AccessLog)? = nil,
        tracer: (any Tracer)? = nil, callGuard: (any CallGuard)?, deadlines: DeadlinePolicy
    ) {
        let methods = (0..<loops).map { _ in Self.methods(of: services) }
        let sorted = methods.first.map { $0.sorted { $0.key < $1.key } } ?? []
        paths = sorted.map(\.key)
        let paths = paths
        handlers = LoopLocal(
            methods.map { table in
                paths.map { path in
                    guard let method = table[path] else {
                        preconditionFailure("a service's methods differ between two readings: \(path)")
                    }
                    return method.handler
                }
            })
        metrics.register(methods: Dictionary(uniqueKeysWithValues: sorted.map { ($0.key, $0.value.handler.grpcType) }))
        recorders = LoopLocal(
            (0..<loops).map { loop in
                paths.map { metrics.recorder(method: $0, loop: loop, accessLog: accessLog, tracer: tracer) }
            })
        // Any path that is not served: `RPCMetrics` counts it under `unknown`.
        unknownRecorders = LoopLocal(
            (0..<loops).map { metrics.recorder(method: nil, loop: $0, accessLog: accessLog, tracer: tracer) })
        open = sorted.map(\.value.open)
        internTable = InternTable(paths + InternTable.commonHeaders)
        registries = LoopLocal(
            (0..<loops).map { _ in CallRegistry(streamWriteHighWatermark: streamWriteHighWatermark) })
        self.maxReceiveMessageBytes = maxReceiveMessageBytes
        callGuards = callGuard.map { shared in LoopLocal((0..<loops).map { _ in LoopCallGuard(shared) }) }
        self.deadlines = deadlines
    }

    /// The method paths (first, so a path's index is its handler's) and the header names and values gRPC
    /// clients send; made once, shared by every loop.
    let internTable: InternTable

    func streamStarted(_ stream: any HTTPServerStream, head: HTTP2RequestHead) -> (any HTTP2StreamDelegate)? {
        guard head.method == "POST" else {
            stream.respond(status: 405, fields: [("allow", "POST")], endStream: true)
            return nil
        }
        guard let contentType = head.value(of: "content-type"), Self.isGRPC(contentType: contentType) else {
            // PROTOCOL-HTTP2.md: a content type that is not gRPC gets HTTP 415, no gRPC status.
            stream.respond(status: 415, fields: [], endStream: true)
            return nil
        }
        guard let index = head.pathIndex, index < paths.count else {
            // Every path not served counts under one fixed label (a caller chooses the path).
            refuse(
                stream, RPCStatus(.unimplemented, "unknown method \(EchoedInput.clip(head.path))"), head: head,
                recorder: unknownRecorders[stream.eventLoop])
            return nil
        }
        // The stream's loop read once: each read through the existential retains it.
        let loop = stream.eventLoop
        let handler = handlers[loop, index]
        let recorder = recorders[loop, index]
        // Who is calling, before anything else about the call is done (open services skip the guard, and
        // their calls never touch it; guarded calls hold their loop's handle, not the guard every loop shares).
        var admitted: AdmittedCallerBox?
        let loopGuard = open[index] ? nil : callGuards?[loop]
        if let loopGuard {
            switch loopGuard.shared.admit(method: head.path, metadata: head.fields, peer: head.peerCertificate) {
            case .success(let caller):
                admitted = caller.map(AdmittedCallerBox.init)
            case .failure(let status):
                let annotations = CallAnnotations()
                // A verified but unlisted identity is named in the status (clipped); the log line carries it too.
                annotations.note("caller", status.details?.info?.metadata["caller"] ?? "-")
                refuse(stream, status, head: head, recorder: recorder, annotations: annotations)
                return nil
            }
        }
        // A call past the guard (or to a guarded service of a server without one) makes its connection a
        // caller's; health and reflection, open to anyone, never do (`HTTP2Configuration.unauthenticatedIdleTimeout`).
        if !open[index] { stream.admitConnection() }
        var requested: Duration?
        if let timeout = head.value(of: "grpc-timeout") {
            do {
                requested = try GRPCTimeout.parse(timeout)
            } catch {
                trailersOnly(stream, error)
                return nil
            }
        }
        let streaming: Bool
        switch handler {
        case .unaryInline, .unaryInlineOrTask, .unary: streaming = false
        case .serverStreaming, .bidiStreaming: streaming = true
        }
        // The call starts when its head was read (one clock reading per socket read, shared by the calls it
        // carried): its deadlines and its start (for the duration metric) both count from there.
        let now = head.receivedAt ?? MonotonicInstant.now()
        let deadline = deadlines.deadlines(requested: requested, streaming: streaming, now: now)
        let metadata = head.fields.filter { !Self.isTransportField($0.name) }
        let context = ServerContext(
            method: head.path, metadata: metadata, deadline: deadline.call, admitted: admitted,
            callGuard: loopGuard)
        return ServerCall(
            stream: stream, handler: handler, context: context, registry: registries[loop],
            maxMessageSize: maxReceiveMessageBytes, recorder: recorder, started: now, requestDeadline: deadline.request)
    }

    /// `application/grpc` or one of its `+format`/`;parameter` forms: the interned String compares equal at
    /// once, others by their bytes (no Unicode-aware prefix match per call).
    static func isGRPC(contentType: String) -> Bool {
        contentType == "application/grpc" || contentType.utf8.starts(with: "application/grpc".utf8)
    }

    /// Fields of the transport rather than the caller's metadata: `grpc-*`, `content-type`, `te`, `user-agent`.
    static func isTransportField(_ name: String) -> Bool {
        // Equal Strings of the intern table compare at once; the prefix is looked at only for names starting with g.
        name == "content-type" || name == "user-agent" || name == "te"
            || (name.utf8.first == UInt8(ascii: "g") && name.utf8.starts(with: "grpc-".utf8))
    }

    /// Answers a call refused before it started, Trailers-Only, and reports it started and finished at once
    /// (so the in-flight gauge balances).
    private func refuse(
        _ stream: any HTTPServerStream, _ status: RPCStatus, head: HTTP2RequestHead, recorder: RPCRecorder,
        annotations: CallAnnotations = CallAnnotations()
    ) {
        trailersOnly(stream, status)
        recorder.started()
        recorder.finished(
            path: head.path, status: status.code, seconds: 0, metadata: head.fields, annotations: annotations)
    }

    private func trailersOnly(_ stream: any HTTPServerStream, _ status: RPCStatus) {
        stream.respond(StatusTrailers.trailersOnly(for: status), endStream: true)
    }

    func finishAllCalls(_ status: RPCStatus, on loops: [EventLoop]) {
        registries.forEach(on: loops) { $0.finishAll(status) }
    }

    func finishRefusedCalls(on loops: [EventLoop], ended: @escaping @Sendable (Int) -> Void) {
        registries.forEach(on: loops) { ended($0.finishRefused()) }
    }
}
