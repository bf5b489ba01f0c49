internal import CCurl
import GatewayFoundation

/// An HTTP client for the App Store Server API, on libcurl's multi interface.
///
/// Callers `await send(_:)` from any task. A caller running on an event loop (a gRPC handler: its task prefers
/// its connection's loop) is served by a multi handle of that loop's own, driven by the loop
/// (`CURLMOPT_SOCKETFUNCTION`/`TIMERFUNCTION` into its epoll set): the request, the wait for Apple and the
/// answer all happen on the caller's thread, with no hand-over at all. Any other caller is handed over to the
/// loop the client was given for them (`init(configuration:loop:)`), whose handle is driven the same way: one
/// driver, one cancellation path, and no thread ever blocks on the network. `https://` URLs negotiate HTTP/2 by
/// ALPN and multiplex (`CURLPIPE_MULTIPLEX` + `CURLOPT_PIPEWAIT`): hundreds of concurrent calls to one host
/// share one or two connections per multi handle. (Debian's curl 7.88.1 breaks connection reuse with h2c
/// prior knowledge, so cleartext `http://` stays HTTP/1.1; it exists for tests and the simulator.)
package final class UpstreamHTTPClient: Sendable {
    /// Client settings.
    package struct Configuration: Sendable, Hashable {
        /// A PEM CA bundle trusted instead of the system's (config `apple.caFile`); empty = system CAs.
        package var caFile: String
        /// With `caFile`, keep trusting the system CAs too (config `apple.trustSystemCAs`). Default false.
        package var trustSystemCAs = false
        /// Longest TCP + TLS connection set-up. Default 5 s (config `apple.connectTimeout`).
        package var connectTimeout: Duration
        /// Larger response bodies fail the transfer (`responseTooLarge`). Default 16 MiB.
        package var maxResponseBytes: Int
        /// Connections kept per host at most; further transfers queue inside libcurl. Default 8.
        package var maxConnectionsPerHost: Int
        /// Streams libcurl multiplexes on one HTTP/2 connection at most (the server's
        /// SETTINGS_MAX_CONCURRENT_STREAMS still applies when lower). Default 200.
        package var maxStreamsPerConnection: Int
        /// The `User-Agent` sent.
        package var userAgent: String

        /// Settings; unspecified values take the documented defaults.
        package init(
            caFile: String = "", connectTimeout: Duration = .seconds(5), maxResponseBytes: Int = 16 << 20,
            maxConnectionsPerHost: Int = 8, maxStreamsPerConnection: Int = 200, userAgent: String = "appstore-gateway"
        ) {
            self.caFile = caFile
            self.connectTimeout = connectTimeout
            self.maxResponseBytes = maxResponseBytes
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxStreamsPerConnection = maxStreamsPerConnection
            self.userAgent = userAgent
        }
    }

    /// The loop callers on no loop are handed over to.
    private let loopForOthers: any IOLoop
    private let onLoops: LoopCurlHandles

    /// A client. Callers on no event loop are served on `loop` (through the same kind of handle as a caller on
    /// a loop, the handle of `loop`'s own), which its owner runs for as long as the client has callers: a call
    /// handed over to a loop that stopped fails `.shutDown`. Throws `.invalidRequest` when libcurl cannot be
    /// initialised.
    package init(configuration: Configuration = Configuration(), loop: any IOLoop) throws(UpstreamTransportError) {
        guard curlGlobalInit == CURLE_OK else {
            throw UpstreamTransportError(.invalidRequest, "curl_global_init failed")
        }
        loopForOthers = loop
        // Every multi handle of this client shares resolved names and TLS sessions (nil: each goes alone).
        onLoops = LoopCurlHandles(configuration: configuration, share: CurlShare())
    }

    deinit {
        onLoops.shutdown()
    }

    /// Sends `request` and waits for the whole response. Cancelling the calling task removes the transfer
    /// from libcurl and throws `.cancelled`.
    package func send(_ request: UpstreamRequest) async throws(UpstreamTransportError) -> UpstreamResponse {
        if let response = try await onLoops.sendOnCurrentLoop(request) { return response }
        return try await onLoops.send(request, handingOverTo: loopForOthers)
    }

    /// The counters so far, of every multi handle.
    package var metrics: UpstreamMetrics { onLoops.metrics }

    /// Fails running transfers with `.shutDown` and asks each loop to free its handle (a loop that already
    /// stopped freed it then). Later `send` calls fail with `.shutDown`. Idempotent.
    package func shutdown() {
        onLoops.shutdown()
    }
}
