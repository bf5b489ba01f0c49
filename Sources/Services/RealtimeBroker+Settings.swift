import AppStoreDomain

extension RealtimeBroker {
    /// The hosted Retention Messaging realtime URL (keys under `notifications.realtime`), served on the webhook
    /// listener: Apple's realtime requests are answered by the teams' `ServeRealtimeRequests` streams.
    package struct Settings: Sendable, Hashable {
        /// `notifications.realtime.path`: where Apple posts realtime requests on the webhook listener; "" (the
        /// default) = no realtime URL. Needs `notifications.webhook.listen` and a path other than the webhook's.
        package var path = ""
        /// `notifications.realtime.timeout`: how long the gateway waits for a stream's answer, from the request's
        /// arrival, before it answers the app's default. Default 400ms, below the response time Apple's
        /// performance test allows (its `responseTimeThreshold`, 500 ms in Apple's examples); 10ms to 5s.
        package var timeoutMilliseconds: UInt64 = 400
        /// `notifications.realtime.maxPendingPerStream`: unanswered requests one stream holds at most; past it
        /// the next stream of the app is asked, or the default answered. Default 64; 1 to 4096.
        package var maxPendingPerStream = 64
        /// `notifications.realtime.maxStreams`: `ServeRealtimeRequests` streams open at once on this replica;
        /// one more is refused RESOURCE_EXHAUSTED. Default 256; 1 to 10000.
        package var maxStreams = 256
        /// `notifications.realtime.maxRequestAge`: a request signed longer ago than this is refused (400), and a
        /// repeat of one answered within it gets the same bytes again, so a captured request cannot be replayed for
        /// a fresh signature. Default 60s; 1s to 1h.
        package var maxRequestAgeMilliseconds: UInt64 = 60_000
        /// How far a request's `signedDate` may lie ahead of the gateway's clock before it is refused (400): the
        /// two clocks' disagreement tolerated. 10 s, not a key.
        package var clockSkewMilliseconds: UInt64 = 10_000
        /// Answered requests remembered at most within `maxRequestAge` (past it the oldest is forgotten first):
        /// 100 000, about 1 600 a second for the default age, not a key.
        package var maxRememberedAnswers = 100_000
        /// Bytes of remembered answers at most (identifiers, signed answers): 64 MiB, not a key.
        package var maxRememberedAnswerBytes = 64 << 20
        /// `notifications.realtime.defaults`: each app's answer when no stream answers in time; an app without
        /// one answers an empty body (Apple then shows its own default message).
        package var defaults: [String: RealtimeDefault] = [:]
        package init() {}
    }
}
