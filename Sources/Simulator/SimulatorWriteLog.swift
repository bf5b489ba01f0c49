import GatewayCore
import HTTP2
import Synchronization

/// The write requests (PUT, POST other than notification history) that reached an endpoint, with their bodies,
/// so a test can check the exact request "Apple" got (`GET /simulator/writes`). The newest `capacity` kept;
/// bodies cut at 64 KiB.
final class SimulatorWriteLog: Sendable {
    static let path = "/simulator/writes"
    private let capacity = 256
    private let entries = Mutex<[OrderedJSON]>([])

    func record(_ request: HTTPRequest, endpoint: AppleEndpoint, environment: AppleEnvironment) {
        let entry = OrderedJSON.object([
            ("method", .string(request.method)), ("path", .string(String(request.path.prefix(1024)))),
            ("endpoint", .string(endpoint.configName)), ("environment", .string(environment.rawValue)),
            ("contentType", .string(request.header("content-type") ?? "")),
            ("body", .string(String(decoding: request.body.prefix(65_536), as: UTF8.self))),
        ])
        entries.withLock { list in
            list.append(entry)
            if list.count > capacity { list.removeFirst(list.count - capacity) }
        }
    }

    /// `{"writes":[{method, path, endpoint, environment, contentType, body}, …]}`, oldest first.
    var json: OrderedJSON { .object([("writes", .array(entries.withLock { $0 }))]) }
}
