import AppStoreDomain
import GatewayFoundation

/// What Apple saw: every authenticated request that reached the rate limit, with its arrival time,
/// whoever sent it (one simulator serves every gateway replica, so this is the per-app view Apple has).
/// Read by tests at `GET /simulator/calls?since=<UNIX ms>`; the newest `capacity` entries are kept.
///
/// `POST /simulator/throttle?ms=N` arms a one-shot 429: the next request answers 429 with `Retry-After`
/// N ms ahead and its (app, endpoint, environment) stays refused until then, as Apple does.
final class SimulatorCallLog: Sendable {
    struct Entry: Sendable {
        var atMilliseconds: Int64
        var bundleId: String
        var endpoint: AppleEndpoint
        var environment: AppleEnvironment
        var status: Int
    }

    static let capacity = 100_000
    private let entries = Lock<[Entry]>([])
    private let throttle = Lock<Int64?>(nil)

    func record(_ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeFirst(Self.capacity / 2) }
            entries.append(entry)
        }
    }

    /// Arms the one-shot 429 (`ms` clamped to 1 ms ... 1 h).
    func armThrottle(milliseconds: Int64) {
        throttle.withLock { $0 = min(max(1, milliseconds), 3_600_000) }
    }

    /// The armed throttle, disarmed.
    func takeThrottle() -> Int64? {
        throttle.withLock { value in
            defer { value = nil }
            return value
        }
    }

    /// `{"calls":[[ms,"bundleId","endpoint","environment",status],…]}` for calls at or after `since`.
    func json(since: Int64) -> OrderedJSON {
        let selected = entries.withLock { $0.filter { $0.atMilliseconds >= since } }
        return .object([
            (
                "calls",
                .array(
                    selected.map {
                        .array([
                            .integer($0.atMilliseconds), .string($0.bundleId), .string($0.endpoint.configName),
                            .string($0.environment.rawValue), .integer(Int64($0.status)),
                        ])
                    })
            )
        ])
    }
}
