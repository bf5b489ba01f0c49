import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Calls a Retention Messaging realtime URL as the App Store does when a customer is about to cancel (and as
/// its performance test does, many at once): a POST of `{"signedPayload": "<JWS>"}` whose payload is a
/// DecodedRealtimeRequestBody signed by the simulator's PKI, timed from the first byte sent to the whole
/// answer. An answer later than `threshold` counts as timed out, as Apple's test counts it.
struct RealtimeRequester: Sendable {
    /// The longest an answer may take (Apple's `responseTimeThreshold`).
    var threshold: Duration
    /// Requests in flight at most (Apple's `maxConcurrentRequests`).
    var concurrency: Int

    /// One request's outcome.
    struct Attempt: Sendable {
        var requestIdentifier: String
        /// The HTTP status; nil when no answer came (refused, reset, or past the transport's timeout).
        var status: Int?
        var latency: Duration
        /// The answer's body, at most 4 KiB of it.
        var body: [UInt8]
        /// SUCCESS (200 within `threshold`), TIMED_OUT, NO_RESPONSE or UNSUCCESSFUL_HTTP_RESPONSE_CODE.
        var result: String
    }

    /// Sends each `signedPayloads` entry (request identifier, JWS) to `url`, `concurrency` at a time; the
    /// attempts in the order given.
    func send(_ signedPayloads: [(String, String)], to url: URL) async -> [Attempt] {
        let width = max(1, concurrency)
        return await withTaskGroup(of: (Int, Attempt).self) { group in
            var results = [Attempt?](repeating: nil, count: signedPayloads.count)
            var next = 0
            func start(_ index: Int) {
                let (identifier, jws) = signedPayloads[index]
                group.addTask { (index, await post(identifier: identifier, jws: jws, to: url)) }
            }
            while next < min(width, signedPayloads.count) {
                start(next)
                next += 1
            }
            while let (index, attempt) = await group.next() {
                results[index] = attempt
                if next < signedPayloads.count {
                    start(next)
                    next += 1
                }
            }
            return results.compactMap { $0 }
        }
    }

    /// One POST, timed.
    func post(identifier: String, jws: String, to url: URL) async -> Attempt {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "content-type")
        request.httpBody = Data(OrderedJSON.object([("signedPayload", .string(jws))]).encoded)
        request.timeoutInterval = Double(threshold.components.seconds) + 2
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let (data, response) = try await URLSession.shared.data(for: request)
            let latency = clock.now - start
            let status = (response as? HTTPURLResponse)?.statusCode
            let result =
                latency > threshold ? "TIMED_OUT" : status == 200 ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
            return Attempt(
                requestIdentifier: identifier, status: status, latency: latency, body: Array(data.prefix(4096)),
                result: result)
        } catch {
            let latency = clock.now - start
            return Attempt(
                requestIdentifier: identifier, status: nil, latency: latency, body: [],
                result: latency > threshold ? "TIMED_OUT" : "NO_RESPONSE")
        }
    }
}
