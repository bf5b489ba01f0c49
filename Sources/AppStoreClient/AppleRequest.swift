import AppStoreDomain
import Foundation
import GatewayFoundation

/// One App Store Server API request as the table of endpoints describes it: which endpoint, the values of its
/// path placeholders in order, the query, the JSON body, and the environment asked for (nil: the app's policy).
package struct AppleRequest: Sendable, Hashable {
    /// The endpoint: method, path template, rate-limit bucket and idempotency.
    package var endpoint: AppleEndpoint
    /// The path placeholders' values, in template order (percent-encoded when the path is built).
    package var pathValues: [String]
    /// The query string without `?` (already encoded), empty for none.
    package var query: String
    /// The JSON body, nil for none.
    package var body: [UInt8]?
    /// The one environment asked for; nil = as the app is configured.
    package var environment: AppleEnvironment?

    /// A request.
    package init(
        _ endpoint: AppleEndpoint, pathValues: [String] = [], query: String = "", body: [UInt8]? = nil,
        environment: AppleEnvironment? = nil
    ) {
        self.endpoint = endpoint
        self.pathValues = pathValues
        self.query = query
        self.body = body
        self.environment = environment
    }
}

extension AppStoreAPIClient {
    /// Sends `request` for `app` with the same budget, JWT, retries (writes per `AppleEndpoint.isIdempotent`),
    /// environment fallback and error mapping as every call, returning Apple's 2xx answer.
    package func send(
        _ request: AppleRequest, app: App, deadline: MonotonicInstant?
    ) async throws(GatewayError) -> AppleResponse {
        guard request.pathValues.allSatisfy({ !$0.isEmpty }),
            let path = request.endpoint.path(values: request.pathValues)
        else {
            throw .internalBug("the path of \(request.endpoint) could not be built", requestID: nil)
        }
        return try await call(
            request.endpoint, path: path, query: request.query, body: request.body, app: app,
            environment: request.environment, deadline: deadline)
    }
}

/// One of Apple's JSON answers, read from the parsed object field by field (`JSONObject`): each field optional, so
/// a missing one is not fatal, and one of another type makes the whole answer unreadable.
package protocol AppleJSONShape {
    /// The answer read from `object`; a field of another type throws.
    init(_ object: JSONObject) throws(JSONFieldMismatch)
}

extension AppleResponse {
    /// The body read as Apple's JSON `Wire`; a body that is not is `appleDataRejected` (DATA_LOSS), naming
    /// `what` and Apple's request id. An empty body reads as `{}`.
    package func decoded<Wire: AppleJSONShape>(_ type: Wire.Type, what: String, app: String) throws(GatewayError)
        -> Wire
    {
        let object = response.body.isEmpty ? JSONObject([:]) : JSONObject(parsing: response.body)
        guard let object, let wire = try? Wire(object) else {
            throw .appleDataRejected(
                app: app, environment: environment,
                problem: "the \(what) answer (apple request id \(appleRequestID ?? "none")) is not the JSON Apple "
                    + "documents")
        }
        return wire
    }

    /// The body as text (for `raw_json` fields); invalid UTF-8 is repaired, never trapped on.
    package var bodyText: String { String(decoding: response.body, as: UTF8.self) }
}
