import ProtoCodec

/// Where one subscription's (or one-time purchase's) events stand: how many were made, and the facts of the last
/// one. Kept by the store beside the state, and written in the same commit as the events it made.
package struct SubscriptionEventCursor: Sendable, Hashable {
    /// The `sequence` of the last event (0 before the first).
    package var sequence: UInt64
    /// The facts consumers last saw (nil before the first event).
    package var facts: SubscriptionEventFacts?

    package init(sequence: UInt64 = 0, facts: SubscriptionEventFacts? = nil) {
        self.sequence = sequence
        self.facts = facts
    }
}

/// What events of one change are made under: the app's configured name and policy, and what made the change
/// (the `cause` every event of it carries).
package struct SubscriptionEventContext: Sendable, Hashable {
    /// The configured app's name (`SubscriptionEvent.app`).
    package var app: String
    package var policy: SubscriptionPolicy
    /// A notification's UUID, "apple-read", "app-posted", "time" or "rebuild".
    package var cause: String

    package init(app: String, policy: SubscriptionPolicy, cause: String) {
        self.app = app
        self.policy = policy
        self.cause = cause
    }

    /// The cause of an Apple read.
    package static let appleRead = "apple-read"
    /// The cause of an app's post (ApplySignedTransaction).
    package static let appPosted = "app-posted"
    /// The cause of a period or grace period that ended.
    package static let time = "time"
    /// The cause of a difference found after `state rebuild` (new rules, a repaired state).
    package static let rebuild = "rebuild"
}

/// Makes the events of one change: compares the state now with the cursor's facts (`SubscriptionEventRule`),
/// numbers the events after the cursor's sequence and fills each with the whole state after the change. Pure but
/// for `newEventID`, which a store gives (random UUIDs; tests give a counter).
package enum SubscriptionEventMaker {
    /// What one change made.
    package struct Outcome: Sendable {
        /// The cursor after the events (its facts move even when no event was made).
        package var cursor: SubscriptionEventCursor
        /// The events, in sequence order; `resumeToken` empty.
        package var events: [SubscriptionEvent]
        /// When time alone changes the state next (`SubscriptionRecord.nextTransitionMillis`), for the store's
        /// timer; nil when only a snapshot can.
        package var nextTransitionMillis: Int64?
    }

    /// The events of `record`'s state at `nowMillis` after `cursor`. A record without a transaction makes none.
    package static func events(
        of record: SubscriptionRecord, after cursor: SubscriptionEventCursor?, at nowMillis: Int64,
        context: SubscriptionEventContext, newEventID: () -> String
    ) -> Outcome {
        let state = record.state(at: nowMillis, policy: context.policy)
        let next = record.nextTransitionMillis(at: nowMillis, policy: context.policy)
        let cursor = cursor ?? SubscriptionEventCursor()
        guard let facts = SubscriptionEventFacts(state) else {
            return Outcome(cursor: cursor, events: [], nextTransitionMillis: next)
        }
        let message = Subscription(record, app: context.app, state: state, stale: false)
        return outcome(
            key: record.key, facts: facts, after: cursor, at: nowMillis, context: context, newEventID: newEventID,
            fill: { $0.subscription = message }, next: next)
    }

    /// The events of a one-time purchase's newest snapshot after `cursor` (keyed by its original transaction id).
    package static func events(
        ofPurchase purchase: SignedTransaction, after cursor: SubscriptionEventCursor?, at nowMillis: Int64,
        context: SubscriptionEventContext, newEventID: () -> String
    ) -> Outcome {
        let cursor = cursor ?? SubscriptionEventCursor()
        guard let facts = SubscriptionEventFacts(purchase: purchase, policy: context.policy) else {
            return Outcome(cursor: cursor, events: [], nextTransitionMillis: nil)
        }
        return outcome(
            key: SubscriptionKey(of: purchase.payload), facts: facts, after: cursor, at: nowMillis, context: context,
            newEventID: newEventID, fill: { $0.purchase = purchase.payload }, next: nil)
    }

    private static func outcome(
        key: SubscriptionKey, facts: SubscriptionEventFacts, after cursor: SubscriptionEventCursor, at nowMillis: Int64,
        context: SubscriptionEventContext, newEventID: () -> String, fill: (inout SubscriptionEvent) -> Void,
        next: Int64?
    ) -> Outcome {
        let drafts = SubscriptionEventRule.events(from: cursor.facts, to: facts)
        var sequence = cursor.sequence
        var events: [SubscriptionEvent] = []
        events.reserveCapacity(drafts.count)
        for draft in drafts {
            sequence += 1
            var event = SubscriptionEvent()
            event.eventId = newEventID()
            event.app = context.app
            event.environment = key.environment
            event.originalTransactionId = key.originalTransactionId
            event.sequence = sequence
            event.type = draft.type
            event.entitlement = draft.entitlement
            event.previousStatus = SubscriptionStatus(rawValue: cursor.facts?.status ?? 0)
            event.occurredAt = ProtoTimestamp(unixMilliseconds: nowMillis)
            event.cause = context.cause
            fill(&event)
            events.append(event)
        }
        return Outcome(
            cursor: SubscriptionEventCursor(sequence: sequence, facts: facts), events: events,
            nextTransitionMillis: next)
    }
}
