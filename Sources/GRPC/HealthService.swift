import GatewayFoundation
import ProtoCodec
import Synchronization

/// The serving status of each service name, shared by the health service and whoever decides readiness.
///
/// Checks of the whole server (service "", what load balancers and kubelets ask, on every loop) read one
/// atomic word that only a status change writes: loops checking health share no lock and write no shared
/// memory. Named services and watchers live under a lock.
public final class HealthStatusBoard: Sendable {
    private struct State {
        /// Every named service's status (the whole server's, service "", is `serverStatus`).
        var services: [String: HealthCheckResponse.ServingStatus] = [:]
        var watchers:
            [UInt64: (service: String, continuation: AsyncStream<HealthCheckResponse.ServingStatus>.Continuation)] = [:]
        var nextWatcher: UInt64 = 0
    }
    private let state: Lock<State>
    /// The whole server's status as its proto number: written under `state`'s lock, read without it.
    private let serverStatus: Atomic<Int32>

    /// Starts with `services` (and "" for the whole server) at `initial`.
    public init(services: [String], initial: HealthCheckResponse.ServingStatus = .serving) {
        var state = State()
        for service in services where !service.isEmpty { state.services[service] = initial }
        self.state = Lock(state)
        serverStatus = Atomic(initial.rawValue)
    }

    /// The status of a service, nil when the name is unknown.
    public func status(of service: String) -> HealthCheckResponse.ServingStatus? {
        if service.isEmpty { return serverStatusNow }
        return state.withLock { $0.services[service] }
    }

    /// The whole server's status.
    private var serverStatusNow: HealthCheckResponse.ServingStatus {
        .init(rawValue: serverStatus.load(ordering: .relaxed))
    }

    /// The status of `service` while `state`'s lock is held ("" for the whole server), nil when unknown.
    private func status(of service: String, in state: State) -> HealthCheckResponse.ServingStatus? {
        service.isEmpty ? serverStatusNow : state.services[service]
    }

    /// Sets one service's status, or every service's when `service` is nil; watchers see changes.
    public func set(_ status: HealthCheckResponse.ServingStatus, service: String? = nil) {
        state.withLock { state in
            let names = service.map { [$0] } ?? [""] + state.services.keys
            for name in names {
                guard self.status(of: name, in: state) != status else { continue }
                if name.isEmpty {
                    serverStatus.store(status.rawValue, ordering: .relaxed)
                } else {
                    state.services[name] = status
                }
                for watcher in state.watchers.values where watcher.service == name {
                    watcher.continuation.yield(status)
                }
            }
        }
    }

    /// The current status at once, then every change; SERVICE_UNKNOWN for an unknown name.
    func updates(of service: String) -> AsyncStream<HealthCheckResponse.ServingStatus> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: HealthCheckResponse.ServingStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> UInt64 in
            continuation.yield(self.status(of: service, in: state) ?? .serviceUnknown)
            let id = state.nextWatcher
            state.nextWatcher += 1
            state.watchers[id] = (service, continuation)
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        return stream
    }
}

/// grpc.health.v1.Health, gRPC's standard health-checking service: Check and Watch.
public struct HealthService: GRPCService {
    /// The service's full name.
    public static let name = "grpc.health.v1.Health"

    let board: HealthStatusBoard

    public init(board: HealthStatusBoard) {
        self.board = board
    }

    /// Open: load balancers and orchestrators probe it without credentials.
    public var isOpen: Bool { true }

    public var methods: [String: MethodHandler] {
        let board = self.board
        // Framed once per reading, so once per loop (`GRPCService.methods`): health checks arrive all the time,
        // and an answer every loop sent would have its reference count written by all of them.
        let answers = HealthAnswers()
        return [
            "/\(Self.name)/Check": .unaryInline(
                HealthCheckRequest.self,
                framed: { request, _ in
                    guard let status = board.status(of: request.service) else {
                        return .failure(RPCStatus(.notFound, "unknown service '\(EchoedInput.clip(request.service))'"))
                    }
                    return .success(answers[status])
                }),
            "/\(Self.name)/Watch": .serverStreaming(HealthCheckRequest.self, HealthCheckResponse.self) {
                request, _, stream throws(RPCStatus) in
                for await status in board.updates(of: request.service) {
                    try await stream.send(HealthCheckResponse(status: status))
                }
                throw RPCStatus(.cancelled, "the watch ended")
            },
        ]
    }
}

/// The Check answer for each status, framed when made.
struct HealthAnswers: Sendable {
    /// Indexed by the proto number (`allCases` is in proto order, 0 to 3).
    private let framed = HealthCheckResponse.ServingStatus.allCases.map {
        FramedMessage(HealthCheckResponse(status: $0))
    }

    /// The framed answer saying `status` (framed here only for a status this release does not know).
    subscript(status: HealthCheckResponse.ServingStatus) -> FramedMessage {
        let index = Int(status.rawValue)
        return framed.indices.contains(index) ? framed[index] : FramedMessage(HealthCheckResponse(status: status))
    }
}
