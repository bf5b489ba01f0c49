/// Sends one encoded export request; called only from the exporter's thread, one request at a time, so an
/// implementation may keep a connection between calls.
package protocol SpanBatchSender: AnyObject {
    /// Posts `body` and waits for the answer at most `timeout`.
    func send(_ body: [UInt8], timeout: Duration) -> SpanBatchSendOutcome
}

/// How one export ended.
package enum SpanBatchSendOutcome: Sendable, Equatable {
    /// The collector took the batch (HTTP 2xx).
    case accepted
    /// The collector answered with this HTTP status.
    case refused(httpStatus: Int)
    /// No answer: the connection failed or the timeout passed.
    case failed(String)
}
