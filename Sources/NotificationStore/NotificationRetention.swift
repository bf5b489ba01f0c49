/// How long the store keeps notifications (`notifications.store.retention`), and what follows from it.
///
/// Entries are pruned `milliseconds` after they arrived, and with them the UUID that deduplicates a notification
/// delivered again. So a notification signed longer ago than the retention is not stored at all: were it
/// stored, a genuine notification replayed after its entry was pruned would be stored and streamed to
/// followers as new. A notification arrives after it is signed, so one signed within the retention is either
/// new or still stored (and deduplicated).
package struct NotificationRetention: Sendable, Hashable {
    /// The retention in milliseconds (positive).
    package var milliseconds: Int64

    /// A retention of `milliseconds` (at least 1).
    package init(milliseconds: Int64) { self.milliseconds = max(1, milliseconds) }

    /// Whether a notification signed at `signedDate` (UNIX ms) is past the retention at `now`: not to be stored.
    package func isStale(signedDate: Int64, now: Int64) -> Bool {
        signedDate < pruneCutoff(now: now)
    }

    /// Entries received before this (UNIX ms) are pruned at `now`.
    package func pruneCutoff(now: Int64) -> Int64 {
        let (cutoff, overflow) = now.subtractingReportingOverflow(milliseconds)
        return overflow ? Int64.min : cutoff
    }
}
