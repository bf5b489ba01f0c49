import AppStoreDomain
import GatewayFoundation
import HTTPServer

/// The write requests (PUT, POST other than notification history) that reached an endpoint, with their bodies,
/// so a test can check the exact request "Apple" got (`GET /simulator/writes`). The newest `capacity` kept;
/// bodies cut at 64 KiB.
final class SimulatorWriteLog: Sendable {
    static let path = "/simulator/writes"

    /// Plain strings, turned into JSON only when read (a stored enum tree would hide its boxes from leak checks).
    private struct Entry: Sendable {
        var method: String
        var path: String
        var endpoint: String
        var environment: String
        var contentType: String
        var body: String
    }

    private let capacity = 256
    private let entries = Lock<[Entry]>([])

    func record(_ request: HTTPRequest, endpoint: AppleEndpoint, environment: AppleEnvironment) {
        let entry = Entry(
            method: request.method, path: String(request.path.prefix(1024)), endpoint: endpoint.configName,
            environment: environment.rawValue, contentType: request.header("content-type") ?? "",
            body: String(decoding: request.body.prefix(65_536), as: UTF8.self))
        entries.withLock { list in
            list.append(entry)
            if list.count > capacity { list.removeFirst(list.count - capacity) }
        }
    }

    /// `{"writes":[{method, path, endpoint, environment, contentType, body}, …]}`, oldest first.
    var json: OrderedJSON {
        .object([
            (
                "writes",
                .array(
                    entries.withLock { $0 }.map { entry in
                        .object([
                            ("method", .string(entry.method)), ("path", .string(entry.path)),
                            ("endpoint", .string(entry.endpoint)), ("environment", .string(entry.environment)),
                            ("contentType", .string(entry.contentType)), ("body", .string(entry.body)),
                        ])
                    })
            )
        ])
    }
}
