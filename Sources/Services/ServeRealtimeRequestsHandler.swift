import AppStoreDomain
import GRPC
import Logging
import ProtoCodec

/// ServeRealtimeRequests: a team's service keeps this stream open to answer Apple's realtime requests for the
/// apps its first message names (each authorized by the `callers` policy). The gateway sends each request as a
/// `RealtimeRequestEvent`; the service answers with a `RealtimeAnswer` naming its request identifier.
struct ServeRealtimeRequestsHandler: Sendable {
    /// Apps one stream may name.
    static let maxApps = 64

    let broker: RealtimeBroker
    let apps: AppDirectory
    let logger = Logger(label: "appstore-gateway.realtime")

    func run(
        _ requests: consuming RequestStream<ServeRealtimeRequestsRequest>, context: ServerContext,
        responses: ResponseStream<RealtimeRequestEvent>
    ) async throws(RPCStatus) {
        guard let first = try await requests.next() else { return }
        guard case .serve(let serve)? = first.kind else {
            throw RPCStatus(.invalidArgument, "the first message of ServeRealtimeRequests must be `serve`")
        }
        let served = try resolve(serve, context: context)
        let caller = CallerIdentity.current
        let stream: RealtimeRouter.StreamID
        let events: AsyncStream<RealtimeRequestEvent>
        switch broker.connect(apps: served, caller: caller?.identity, callerLimit: caller?.maxRealtimeStreams) {
        case .success(let opened): (stream, events) = opened
        case .failure(.replicaFull):
            throw RPCStatus(.resourceExhausted, "this gateway serves notifications.realtime.maxStreams streams already")
        case .failure(.callerFull(let limit)):
            throw RPCStatus(
                .resourceExhausted,
                "this caller holds \(limit) ServeRealtimeRequests streams already (callers[].maxRealtimeStreams)")
        }
        logger.info(
            "realtime stream open",
            metadata: ["apps": "\(served.sorted().joined(separator: ","))", "stream": "\(stream)"])
        // The writer sends what the broker routes here; the reader (this task) takes the answers.
        let writer = Task {
            for await event in events {
                do throws(RPCStatus) { try await responses.send(event) } catch { return }
            }
        }
        defer {
            writer.cancel()
            broker.disconnect(stream)
            logger.info("realtime stream closed", metadata: ["stream": "\(stream)"])
        }
        while let message = try await requests.next() {
            guard case .answer(let answer)? = message.kind else {
                throw RPCStatus(.invalidArgument, "`serve` is the first message only; later messages are answers")
            }
            let problem = RealtimeAnswering.problem(answer)
            if let problem {
                logger.warning("realtime answer refused", metadata: ["stream": "\(stream)", "reason": "\(problem)"])
            }
            broker.deliver(answer, problem: problem, from: stream)
        }
    }

    /// The configured names of the apps `serve` names, each one the caller may use.
    private func resolve(_ serve: RealtimeServe, context: ServerContext) throws(RPCStatus) -> Set<String> {
        guard serve.apps.count <= Self.maxApps else {
            throw RPCStatus(.invalidArgument, "serve.apps names at most \(Self.maxApps) apps")
        }
        let names = serve.apps.isEmpty ? [""] : serve.apps
        var served: Set<String> = []
        for name in names {
            guard name.utf8.count <= RequestContract.maxAppBytes else {
                throw RPCStatus(
                    .invalidArgument, "serve.apps: each app is at most \(RequestContract.maxAppBytes) bytes")
            }
            if let refusal = context.authorization(forApp: name) { throw refusal }
            do throws(GatewayError) {
                served.insert(try apps.app(named: name).name)
            } catch {
                throw error.rpcStatus
            }
        }
        return served
    }
}
