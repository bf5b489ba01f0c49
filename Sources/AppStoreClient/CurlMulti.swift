internal import CCurl
import GatewayFoundation

/// Initialises libcurl's global state once per process, before the first handle.
let curlGlobalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

/// One libcurl multi handle and the transfers in it, confined to the event loop that drives it
/// (`LoopCurlDriver`). It starts transfers, answers finished and cancelled ones and counts them; who waits for
/// the sockets is the driver's business.
final class CurlMulti {
    let multi: UnsafeMutableRawPointer
    private let configuration: UpstreamHTTPClient.Configuration
    /// This handle's counters; read from other threads (`UpstreamHTTPClient.metrics`).
    let counters: UpstreamCounters
    /// Held until after `curl_multi_cleanup`: closing connections may still store TLS sessions in it.
    private let share: CurlShare?
    private var byID: [Int: CurlTransfer] = [:]
    private var byHandle: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var released = false

    init(
        configuration: UpstreamHTTPClient.Configuration, counters: UpstreamCounters, share: CurlShare?
    ) throws(UpstreamTransportError) {
        guard curlGlobalInit == CURLE_OK else {
            throw UpstreamTransportError(.invalidRequest, "curl_global_init failed")
        }
        guard let multi = curl_multi_init() else {
            throw UpstreamTransportError(.invalidRequest, "curl_multi_init failed")
        }
        self.configuration = configuration
        self.counters = counters
        self.share = share
        self.multi = multi
        do {
            try check(ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)), "PIPELINING")
            try check(
                ccurl_multi_setopt_long(
                    multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(0, configuration.maxConnectionsPerHost)),
                "MAX_HOST_CONNECTIONS")
            try check(
                ccurl_multi_setopt_long(
                    multi, CURLMOPT_MAX_CONCURRENT_STREAMS, min(max(1, configuration.maxStreamsPerConnection), 1000)),
                "MAX_CONCURRENT_STREAMS")
        } catch {
            curl_multi_cleanup(multi)
            throw error
        }
    }

    deinit {
        release(UpstreamTransportError(.shutDown, "client shut down"))
    }

    func check(_ code: CURLMcode, _ what: String) throws(UpstreamTransportError) {
        guard code == CURLM_OK else {
            throw UpstreamTransportError(
                .invalidRequest, "curl_multi_setopt(\(what)): \(String(cString: curl_multi_strerror(code)))")
        }
    }

    /// Adds the submission's transfer to the handle. A request libcurl refuses is not started: the error is
    /// returned and the continuation left to the caller (who may hold a lock resuming must not be done under).
    func start(_ submission: Submission) -> UpstreamTransportError? {
        counters.add { $0.transfersStarted += 1 }
        let transfer: CurlTransfer
        do {
            transfer = try CurlTransfer(submission: submission, configuration: configuration, share: share)
        } catch {
            counters.add { $0.transfersFailed += 1 }
            return error
        }
        let added = curl_multi_add_handle(multi, transfer.easy)
        guard added == CURLM_OK else {
            counters.add { $0.transfersFailed += 1 }
            transfer.forgetCaller()
            return UpstreamTransportError(
                .invalidRequest, "curl_multi_add_handle: \(String(cString: curl_multi_strerror(added)))")
        }
        byID[submission.id] = transfer
        byHandle[transfer.easy] = transfer
        return nil
    }

    /// Removes the transfer `id` (if it still runs) and answers its caller `.cancelled`.
    func cancel(id: Int) {
        guard let transfer = byID[id] else { return }  // already finished
        counters.add { $0.transfersCancelled += 1 }  // counted before the caller resumes
        finish(transfer, .failure(UpstreamTransportError(.cancelled, "cancelled by the caller")))
    }

    /// Removes the transfer of the easy handle `easy` (if it still runs) and answers its caller with `error`.
    func fail(easy: UnsafeMutableRawPointer, _ error: UpstreamTransportError) {
        guard let transfer = byHandle[easy] else { return }
        finish(transfer, .failure(error))
    }

    /// Answers every transfer libcurl reports finished.
    func collectFinished() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                let transfer = byHandle[easy]
            else { continue }
            let code = message.pointee.data.result
            finish(transfer, transfer.outcome(code))
        }
    }

    /// Ends every running transfer with `error`.
    func failAll(_ error: UpstreamTransportError) {
        for transfer in Array(byID.values) { finish(transfer, .failure(error)) }
    }

    /// Ends every transfer with `error` and frees the multi handle (its connections close; libcurl calls the
    /// socket callback for each as it goes). Nothing may use the handle afterwards. Idempotent.
    func release(_ error: UpstreamTransportError) {
        guard !released else { return }
        released = true
        failAll(error)
        curl_multi_cleanup(multi)
    }

    /// Detaches `transfer` from the multi handle and answers its caller; its easy handle, header list and body
    /// buffer are freed when the last reference (ours) goes.
    private func finish(_ transfer: CurlTransfer, _ result: TransferResult) {
        _ = curl_multi_remove_handle(multi, transfer.easy)  // fails only for a handle not added
        byID[transfer.id] = nil
        byHandle[transfer.easy] = nil
        let connects = transfer.connectionsOpened()
        counters.add { metrics in
            metrics.connectionsOpened += connects
            switch result {
            case .success: metrics.transfersSucceeded += 1
            case .failure: metrics.transfersFailed += 1
            }
        }
        transfer.complete(result)
    }
}

/// One multi handle's counters: written by its loop, summed by whoever reads the client's metrics (the lock is
/// the handle's own, so loops never share one).
final class UpstreamCounters: Sendable {
    private let metrics = Lock(UpstreamMetrics())

    func add(_ change: (inout UpstreamMetrics) -> Void) {
        metrics.withLock { change(&$0) }
    }

    var value: UpstreamMetrics { metrics.withLock { $0 } }
}

extension UpstreamMetrics {
    /// The sum of two sets of counters.
    static func + (lhs: Self, rhs: Self) -> Self {
        var sum = lhs
        sum.transfersStarted += rhs.transfersStarted
        sum.transfersSucceeded += rhs.transfersSucceeded
        sum.transfersFailed += rhs.transfersFailed
        sum.transfersCancelled += rhs.transfersCancelled
        sum.connectionsOpened += rhs.connectionsOpened
        sum.transfersOnCallerLoops += rhs.transfersOnCallerLoops
        return sum
    }
}
