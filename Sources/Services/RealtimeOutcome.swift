import ProtoCodec

/// How the gateway's wait for a stream's answer to one realtime request ended.
package enum RealtimeOutcome: Sendable, Hashable {
    /// A stream answered in time (an answer with no choice is a valid "no realtime message").
    case answered(RealtimeAnswer)
    /// A stream answered in time, but its answer broke the contract (the reason): the default is answered.
    case invalid(String)
    /// No stream serves the app on this replica.
    case noStream
    /// Every stream of the app holds its maximum of unanswered requests.
    case full
    /// A request with the same identifier is already waiting (Apple's retry, or a replay).
    case duplicate
    /// The stream asked ended before it answered.
    case streamClosed
    /// No answer within the budget.
    case late

    /// The `outcome` label of `appstore_gateway_realtime_requests_total`: answered, invalid, defaulted or late.
    package var label: String {
        switch self {
        case .answered: "answered"
        case .invalid: "invalid"
        case .late: "late"
        case .noStream, .full, .duplicate, .streamClosed: "defaulted"
        }
    }
}
