import GatewayFoundation

/// The outbound sinks' progress in memory, with `SQLiteEventSinkStore`'s semantics: for tests of the layers above.
/// Lost when the process ends.
package final class MemoryEventSinkStore: EventSinkStore {
    private struct Sink {
        var through: Int64
        var settled: Set<Int64> = []
        var deadLetters: [Int64: EventDeadLetter] = [:]
    }

    private let sinks = Lock([EventSinkID: Sink]())

    package init() {}

    package func openSink(_ sink: EventSinkID, startingAfter start: Int64, nowMillis: Int64)
        async throws(NotificationStoreFailure) -> EventSinkProgress
    {
        sinks.withLock { sinks in
            let held = sinks[sink] ?? Sink(through: max(0, start))
            sinks[sink] = held
            return EventSinkProgress(through: held.through, settled: held.settled.filter { $0 > held.through })
        }
    }

    package func record(_ sink: EventSinkID, _ update: EventSinkUpdate) async throws(NotificationStoreFailure) {
        try sinks.withLock { sinks throws(NotificationStoreFailure) in
            guard var held = sinks[sink] else {
                throw NotificationStoreFailure("event sink store: \(sink) was never opened")
            }
            held.through = max(held.through, update.through)
            for letter in update.deadLetters { held.deadLetters[letter.position] = letter }
            held.settled.formUnion(update.settled)
            let through = held.through
            held.settled = held.settled.filter { $0 > through }
            sinks[sink] = held
        }
    }

    package func deadLetters(_ sink: EventSinkID, deadSince: Int64, after position: Int64, limit: Int)
        async throws(NotificationStoreFailure) -> [EventDeadLetter]
    {
        sinks.withLock { sinks in
            let letters = (sinks[sink]?.deadLetters.values).map(Array.init) ?? []
            return Array(
                letters.filter { $0.deadAt >= deadSince && $0.position > position }
                    .sorted { $0.position < $1.position }
                    .prefix(max(0, limit)))
        }
    }

    package func removeDeadLetter(_ sink: EventSinkID, position: Int64) async throws(NotificationStoreFailure) -> Bool {
        sinks.withLock { sinks in sinks[sink]?.deadLetters.removeValue(forKey: position) != nil }
    }

    package func deadLetterCount(_ sink: EventSinkID) async throws(NotificationStoreFailure) -> Int {
        sinks.withLock { sinks in sinks[sink]?.deadLetters.count ?? 0 }
    }
}
