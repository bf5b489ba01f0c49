import EventLoops
import ProtoCodec
import Synchronization
import Testing

@testable import GRPC
@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// A stream that records what the router answered on it.
private final class RecordingStream: HTTPServerStream {
    let eventLoop: EventLoop
    var isClosed = false
    var hasResponded = false
    var bufferedBytes = 0
    /// The heads sent, and whether each ended the stream.
    var responses: [(fields: [(name: String, value: String)], endStream: Bool)] = []
    /// Whether the router marked the stream's connection as a caller's.
    var admittedConnection = false

    init(eventLoop: EventLoop) { self.eventLoop = eventLoop }

    func respond(
        _ head: HeaderBlock, adding extra: (name: StaticString, value: UnsafeBufferPointer<UInt8>)?, endStream: Bool
    ) {
        hasResponded = true
        responses.append((head.fieldList, endStream))
    }
    func write(_ bytes: [UInt8]) {}
    func write(appending body: (inout [UInt8]) -> Void) {}
    func finish(trailers: HeaderBlock?) {}
    func releaseReceived(_ count: Int) {}
    func releaseAllReceived() {}
    func reset(errorCode: HTTP2ErrorCode) {}
    func admitConnection() { admittedConnection = true }
}

/// A guard that refuses everyone (or admits everyone anonymously) and counts how often it was asked.
private final class CountingGuard: CallGuard {
    let admissions = Atomic<Int>(0)
    let admitsAll: Bool

    init(admitsAll: Bool = false) { self.admitsAll = admitsAll }

    func admit(method: String, metadata: [(name: String, value: String)], peer: PeerCertificateIdentity?)
        -> Result<(any AdmittedCaller)?, RPCStatus>
    {
        admissions.add(1, ordering: .relaxed)
        return admitsAll ? .success(nil) : .failure(RPCStatus(.unauthenticated, "no credentials"))
    }

    func authorize(_ caller: (any AdmittedCaller)?, app: String, method: String) -> RPCStatus? { nil }
}

/// A one-method service, open or not as it declares; its name says nothing about either.
private struct TestService: GRPCService {
    let name: String
    let isOpen: Bool

    var methods: [String: MethodHandler] {
        ["/\(name)/Call": .unaryInline(HealthCheckRequest.self) { _, _ in .success(HealthCheckResponse()) }]
    }
}

@Suite struct OpenServiceTests {
    /// Starts a call to `path` on a router over `services` guarded by `callGuard`; returns what the stream was
    /// answered and whether a call began.
    private static func start(_ path: String, services: [any GRPCService], callGuard: CountingGuard) async throws
        -> (answers: Int, endedAtOnce: Bool, started: Bool, admittedConnection: Bool)
    {
        let router = Router(
            services: services, loops: 1, streamWriteHighWatermark: 65_536, maxReceiveMessageBytes: 1024,
            callGuard: callGuard,
            deadlines: DeadlinePolicy(defaultTimeout: .seconds(60), maximumTimeout: .seconds(60)))
        return try await onLoop { loop in
            let stream = RecordingStream(eventLoop: loop)
            var head = HTTP2RequestHead()
            head.method = "POST"
            head.path = path
            var bytes = path
            head.pathIndex = bytes.withUTF8 { router.internTable.lookup($0)?.index }
            head.fields = [("content-type", "application/grpc")]
            let call = router.streamStarted(stream, head: head)
            call?.streamClosed(stream, errorCode: .cancel)
            return (
                stream.responses.count, stream.responses.first?.endStream ?? false, call != nil,
                stream.admittedConnection
            )
        }
    }

    @Test func aServiceDeclaredOpenSkipsTheCallGuard() async throws {
        let callGuard = CountingGuard()
        let services = [TestService(name: "test.Open", isOpen: true), TestService(name: "test.Guarded", isOpen: false)]
        let outcome = try await Self.start("/test.Open/Call", services: services, callGuard: callGuard)
        #expect(callGuard.admissions.load(ordering: .relaxed) == 0)
        #expect(outcome.started)
        #expect(outcome.answers == 0)
    }

    @Test func aServiceNotDeclaredOpenIsGuarded() async throws {
        let callGuard = CountingGuard()
        let services = [TestService(name: "test.Open", isOpen: true), TestService(name: "test.Guarded", isOpen: false)]
        let outcome = try await Self.start("/test.Guarded/Call", services: services, callGuard: callGuard)
        #expect(callGuard.admissions.load(ordering: .relaxed) == 1)
        #expect(!outcome.started)
        #expect(outcome.answers == 1 && outcome.endedAtOnce)  // refused Trailers-Only
    }

    @Test func onlyAnAdmittedCallToAGuardedServiceMakesTheConnectionACallers() async throws {
        let services = [TestService(name: "test.Open", isOpen: true), TestService(name: "test.Guarded", isOpen: false)]
        let open = try await Self.start(
            "/test.Open/Call", services: services, callGuard: CountingGuard(admitsAll: true))
        #expect(open.started && !open.admittedConnection)  // health and reflection never vouch for a connection
        let refused = try await Self.start("/test.Guarded/Call", services: services, callGuard: CountingGuard())
        #expect(!refused.started && !refused.admittedConnection)
        let admitted = try await Self.start(
            "/test.Guarded/Call", services: services, callGuard: CountingGuard(admitsAll: true))
        #expect(admitted.started && admitted.admittedConnection)
    }

    @Test func healthAndReflectionDeclareThemselvesOpenAndServicesAreGuardedByDefault() {
        #expect(HealthService(board: HealthStatusBoard(services: [])).isOpen)
        #expect(ReflectionService(listing: []).isOpen)
        struct Plain: GRPCService { var methods: [String: MethodHandler] { [:] } }
        #expect(!Plain().isOpen)
    }

    @Test func reflectionListsTheServicesItIsGivenAndItself() {
        let services: [any GRPCService] = [
            TestService(name: "test.One", isOpen: false), HealthService(board: HealthStatusBoard(services: [])),
        ]
        let listed = ReflectionService(listing: services).listed.sorted()
        #expect(
            listed == [
                "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection", "test.One",
            ])
    }

    @Test func serviceNamesComeFromMethodPaths() {
        #expect(TestService(name: "a.b.C", isOpen: false).serviceNames == ["a.b.C"])
        #expect(TestService.serviceName(ofPath: "/a.B/M") == "a.B")
        for malformed in ["", "/", "a.B/M", "/a.B", "//M", "/a.B/", "/a/B/M"] {
            #expect(TestService.serviceName(ofPath: malformed) == nil, "\(malformed)")
        }
    }
}
