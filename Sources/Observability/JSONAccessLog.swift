import GRPC
import GatewayFoundation
import Logging
import Synchronization

/// The access log: one info line per RPC the gRPC server finished (it leaves health checks out), as a JSON
/// line queued on a `LogLineWriter` when one is given (the fast path for JSON logs, see `AccessLogLine`), else
/// through `logger`. The server asks it for a writer per method and loop when it starts (`AccessLog`).
public final class JSONAccessLog: AccessLog {
    private let logger: Logger
    /// With JSON logs: the access line is built as bytes and queued here (see `AccessLogLine`).
    private let lineWriter: LogLineWriter?
    private let line: AccessLogLine
    private let clock: any GatewayClock
    private let requestIDs = RequestIDs()

    /// Lines at info on `logger` (none when its level is above info), or queued on `writer` as bytes.
    public init(logger: Logger, writer: LogLineWriter? = nil, clock: any GatewayClock = SystemClock()) {
        self.logger = logger
        lineWriter = writer
        line = AccessLogLine(label: logger.label, redaction: SecretRedaction())
        self.clock = clock
    }

    public func writer(for method: RPCMethodLabels, path: String?, loop: Int) -> (any AccessLogWriter)? {
        guard logger.logLevel <= .info else { return nil }
        return MethodAccessLog(log: self, labels: method, path: path)
    }

    /// Writes the line of one call of `path`, a method labelled `method` (`members`: its names, escaped once).
    func write(
        _ method: RPCMethodLabels, members: AccessLogLine.MethodMembers?, path: String, status: StatusCode,
        seconds: Double, metadata: [(name: String, value: String)], annotations: CallAnnotations
    ) {
        // An unregistered path is the caller's text: logged, but cut short.
        let methodText = method == .unknown ? String(path.prefix(200)) : path
        if let lineWriter {
            // The server's calls carry their request id in their identity; only a call it never saw through
            // needs one made here.
            let noted = annotations.noted
            let identity = annotations.identity
            let requestID = identity != nil ? "" : madeRequestID(metadata: metadata, noted: noted)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(512)
            line.append(
                .init(
                    method: methodText, service: method.service, grpcMethod: method.method, status: status,
                    durationMilliseconds: AccessLogLine.milliseconds(seconds: seconds), requestID: requestID,
                    identity: identity,
                    annotations: noted),
                at: clock.wallNow(), methodMembers: members, to: &bytes)
            bytes.withUnsafeBytes { lineWriter.enqueue($0) }
            return
        }
        let noted = annotations.all
        let requestID = madeRequestID(metadata: metadata, noted: noted)
        var fields: Logger.Metadata = [
            "method": .string(methodText),
            "grpc_service": .string(method.service), "grpc_method": .string(method.method),
            "status": .string(status.description), "grpc_code": .stringConvertible(Int(status.rawValue)),
            "duration_ms": .stringConvertible(AccessLogLine.milliseconds(seconds: seconds)),
            "request_id": .string(requestID),
        ]
        for (name, value) in noted { fields[name] = .string(value) }
        logger.info("rpc", metadata: fields)
    }

    /// The request id of a call without an identity: the caller's `x-request-id`, else none when the handler
    /// noted one, else a new one.
    private func madeRequestID(metadata: [(name: String, value: String)], noted: [(name: String, value: String)])
        -> String
    {
        metadata.first(where: { $0.name == "x-request-id" })?.value
            ?? (noted.contains { $0.name == "request_id" } ? "" : requestIDs.next())
    }
}

/// One method's access-log writer on one loop: its labels, and the members naming it escaped once.
final class MethodAccessLog: AccessLogWriter {
    let log: JSONAccessLog
    let labels: RPCMethodLabels
    /// The access log's members naming the method (nil for unregistered paths, which name themselves).
    let members: AccessLogLine.MethodMembers?

    init(log: JSONAccessLog, labels: RPCMethodLabels, path: String?) {
        self.log = log
        self.labels = labels
        members = path.map {
            AccessLogLine.MethodMembers(method: $0, service: labels.service, grpcMethod: labels.method)
        }
    }

    func write(
        path: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: CallAnnotations
    ) {
        log.write(
            labels, members: members, path: path, status: status, seconds: seconds, metadata: metadata,
            annotations: annotations)
    }
}

/// Request ids for calls that brought none: unique in this process, short, not guessable across runs.
final class RequestIDs: Sendable {
    private let counter = Atomic<UInt64>(0)
    private let prefix = String(UInt64.random(in: 0...UInt64.max), radix: 16)

    func next() -> String { "\(prefix)-\(counter.add(1, ordering: .relaxed).newValue)" }
}
