/// Where the gateway's outbound sinks keep their progress (docs/subscription-events.md, "Webhooks to teams" and
/// "Relay"): for each sink, a low watermark (every position at or below it is settled: acknowledged,
/// dead-lettered, or not for this sink), the positions above it already acknowledged, and the dead letters.
///
/// A sink reads a log of positions (the subscription events' positions, or the notification log's), delivers,
/// and records what it settled here, so that after a crash it delivers again exactly what was not acknowledged
/// (at least once: receivers dedupe on the event id). Every call may block on I/O: run on the store's own
/// thread, never an event loop. Failures: `NotificationStoreFailure`.
package protocol EventSinkStore: Sendable {
    /// The progress of `sink`. A sink never seen before is recorded now with its watermark at `start` (the newest
    /// position of its log when it first starts: a sink added later begins with what comes after, not with the
    /// whole retained history), and that is returned.
    func openSink(_ sink: EventSinkID, startingAfter start: Int64, nowMillis: Int64)
        async throws(NotificationStoreFailure) -> EventSinkProgress
    /// Records what `sink` settled, in one commit: the new watermark (never moved backwards), the positions above
    /// it that were acknowledged (those at or below it are dropped), and the new dead letters.
    func record(_ sink: EventSinkID, _ update: EventSinkUpdate) async throws(NotificationStoreFailure)
    /// The dead letters of `sink` that died at or after `deadSince` (UNIX ms), in position order, after
    /// `position`, at most `limit`.
    func deadLetters(_ sink: EventSinkID, deadSince: Int64, after position: Int64, limit: Int)
        async throws(NotificationStoreFailure) -> [EventDeadLetter]
    /// Removes one dead letter (it was delivered by a replay); false when it was not there.
    func removeDeadLetter(_ sink: EventSinkID, position: Int64) async throws(NotificationStoreFailure) -> Bool
    /// How many dead letters `sink` has.
    func deadLetterCount(_ sink: EventSinkID) async throws(NotificationStoreFailure) -> Int
}

/// One outbound sink: what it delivers and where. Its identity is its URL (one URL of each kind is one sink,
/// whatever else its settings say).
package struct EventSinkID: Sendable, Hashable, CustomStringConvertible {
    /// What a sink delivers, and so which log its positions are of.
    package enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Subscription events to a team's webhook (`subscriptions.webhooks`): positions of the event outbox.
        case subscriptionEvents = "subscription_events"
        /// Apple's notifications relayed as received (`notifications.forward`): positions of the notification log.
        case notifications
    }

    package var kind: Kind
    /// The endpoint's URL, exactly as configured.
    package var url: String

    package init(kind: Kind, url: String) {
        self.kind = kind
        self.url = url
    }

    package var description: String { "\(kind.rawValue) \(url)" }
}

/// A sink's stored progress.
package struct EventSinkProgress: Sendable, Hashable {
    /// Every position at or below it is settled.
    package var through: Int64
    /// Positions above `through` already acknowledged (or dead-lettered): not to be delivered again.
    package var settled: Set<Int64>

    package init(through: Int64, settled: Set<Int64> = []) {
        self.through = through
        self.settled = settled
    }
}

/// What a sink settled since it last recorded.
package struct EventSinkUpdate: Sendable, Hashable {
    /// The new low watermark.
    package var through: Int64
    /// Positions above `through` settled (acknowledged or dead-lettered); ones at or below it may be listed too
    /// and are ignored.
    package var settled: [Int64]
    /// Events given up on.
    package var deadLetters: [EventDeadLetter]

    package init(through: Int64, settled: [Int64] = [], deadLetters: [EventDeadLetter] = []) {
        self.through = through
        self.settled = settled
        self.deadLetters = deadLetters
    }
}

/// An event a sink gave up on after `maxAge` of failed attempts, with the exact body it sent, so a replay sends
/// the same bytes.
package struct EventDeadLetter: Sendable, Hashable {
    /// Its position in the sink's log.
    package var position: Int64
    /// The event's id (a subscription event's `event_id`, a notification's UUID).
    package var eventId: String
    package var attempts: Int
    /// When it was first attempted, and when it was given up (UNIX ms).
    package var firstAttemptAt: Int64
    package var deadAt: Int64
    /// Why the last attempt failed ("HTTP 500", "timed out", …).
    package var lastError: String
    /// The request body as sent.
    package var body: [UInt8]

    package init(
        position: Int64, eventId: String, attempts: Int, firstAttemptAt: Int64, deadAt: Int64, lastError: String,
        body: [UInt8]
    ) {
        self.position = position
        self.eventId = eventId
        self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.deadAt = deadAt
        self.lastError = lastError
        self.body = body
    }
}
