import GatewayFoundation
import HTTPServer

/// The last requests the simulator received, with their trace headers, so a test can see what reached
/// "Apple" (`GET /simulator/requests`). Bounded: only the newest `capacity` requests are kept, and never
/// the authorization header.
final class RequestRecorder: Sendable {
    /// The control path listing the recorded requests as JSON.
    static let path = "/simulator/requests"
    /// The headers kept for each request.
    static let recordedHeaders = ["traceparent", "tracestate", "user-agent"]

    private struct Entry {
        var method: String
        var path: String
        var headers: [(String, String)]
    }

    private let capacity: Int
    private let entries = Lock<[Entry]>([])

    init(capacity: Int = 256) {
        self.capacity = capacity
    }

    func record(_ request: HTTPRequest) {
        let headers = Self.recordedHeaders.compactMap { name in
            request.header(name).map { (name, String($0.prefix(1024))) }
        }
        let entry = Entry(method: request.method, path: String(request.path.prefix(1024)), headers: headers)
        entries.withLock { list in
            list.append(entry)
            if list.count > capacity { list.removeFirst(list.count - capacity) }
        }
    }

    /// `[{"method":…,"path":…,"headers":{"traceparent":…}}, …]`, oldest first.
    func response() -> HTTPResponse {
        var json = "["
        for (index, entry) in entries.withLock({ $0 }).enumerated() {
            if index > 0 { json += "," }
            json += "{\"method\":"
            JSONString.append(entry.method, to: &json)
            json += ",\"path\":"
            JSONString.append(entry.path, to: &json)
            json += ",\"headers\":{"
            for (position, (name, value)) in entry.headers.enumerated() {
                if position > 0 { json += "," }
                JSONString.append(name, to: &json)
                json += ":"
                JSONString.append(value, to: &json)
            }
            json += "}}"
        }
        json += "]"
        return HTTPResponse(status: 200, headers: [("content-type", "application/json")], body: Array(json.utf8))
    }
}
