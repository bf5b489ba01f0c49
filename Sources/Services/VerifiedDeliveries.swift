import GatewayFoundation
import ProtoCodec

/// Notifications the webhook has just verified, bound to their app and decoded, handed to the subscription
/// projector in memory so it does not parse, check and decode the same three JWS again when it reads them back
/// from the log a few milliseconds later (a third of its work per notification).
///
/// A hand-off is a shortcut, never the truth: the log is. The projector takes an entry only for a log entry with
/// the same `notificationUUID` and byte-identical `signedPayload`, and verifies whatever it finds no entry for
/// (after a restart, entries another replica stored, a burst past the capacity). The webhook offers an entry
/// before its insert commits (so the projector, woken by the commit, finds it) and withdraws it when the insert
/// stored nothing. At most `capacity` entries are held; an entry older than `lifetime` (its log entry was
/// projected elsewhere: another replica holds the projection's lease) goes when room is needed.
package final class VerifiedDeliveries: Sendable {
    private struct Entry {
        var signedPayload: String
        var data: NotificationData
        var at: MonotonicInstant
    }

    /// The most entries held (two of the projector's pages: ~15 KB each, ~8 MiB in all).
    package static let capacity = 512
    /// How long an entry waits for the projector before room may be made of it.
    package static let lifetime: Duration = .seconds(30)

    private let clock: any GatewayClock
    private let entries = Lock<[String: Entry]>([:])

    package init(clock: any GatewayClock = SystemClock()) {
        self.clock = clock
    }

    /// Offers the verified, decoded `data` of the notification `uuid` signed as `signedPayload`; false (nothing
    /// held) when the hand-off is full of entries younger than `lifetime`.
    @discardableResult
    package func offer(uuid: String, signedPayload: String, data: NotificationData) -> Bool {
        let now = clock.monotonicNow()
        return entries.withLock { entries in
            if entries.count >= Self.capacity, entries[uuid] == nil {
                entries = entries.filter { now - $0.value.at < Self.lifetime }
                if entries.count >= Self.capacity { return false }
            }
            entries[uuid] = Entry(signedPayload: signedPayload, data: data, at: now)
            return true
        }
    }

    /// Withdraws the offer for `uuid` (its insert stored nothing: a duplicate, or the store failed).
    package func withdraw(uuid: String) {
        entries.withLock { $0[uuid] = nil }
    }

    /// The data offered for the log entry `uuid` with `signedPayload`, removed from the hand-off; nil when none
    /// was offered for exactly that payload.
    package func take(uuid: String, signedPayload: String) -> NotificationData? {
        entries.withLock { entries in
            guard let entry = entries.removeValue(forKey: uuid) else { return nil }
            return entry.signedPayload == signedPayload ? entry.data : nil
        }
    }

    /// How many entries are held (metrics, tests).
    package var count: Int { entries.withLock { $0.count } }
}
