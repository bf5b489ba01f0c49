import Testing

@testable import AppStoreDomain
@testable import GatewayFoundation

/// The fair-share pump's decisions against a real `TokenBucket`, on simulated time: no tasks, no sleeps.
@Suite struct FairShareGateTests {
    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)
    /// One token interval of the simulated bucket (10 tokens a second, burst 1).
    static let interval = Duration.milliseconds(100)

    /// One bucket, its pump and its callers, driven event by event as the fair-share budget drives them: a call
    /// takes a free token at once while nobody waits, else it waits; the pump runs `turn` → the bucket →
    /// `answered` → a sleep until `wakeAt`. Each flooder has `workers` calls out at all times: a worker sends its
    /// next call 1 ms after the last one was answered, served or refused.
    struct Simulation {
        static let turnaround = Duration.milliseconds(1)
        var gate = FairShareGate<Int>()
        var bucket = TokenBucket(perSecond: 10, burst: 1, now: FairShareGateTests.t0)
        var now = FairShareGateTests.t0
        let maxWait: Duration
        var pumping = false
        var wakeAt: MonotonicInstant?
        var nextTicket = 0
        var calls: [Int: (caller: String, arrived: MonotonicInstant)] = [:]
        /// The flood's next calls: when each is sent, and by whom.
        var floodCalls: [(at: MonotonicInstant, caller: String)] = []
        /// Per call of "steady": how long it waited for its token, or nil when refused.
        var steady: [Duration?] = []
        var flooderAnswers: [String: [TokenBucket.Reservation]] = [:]

        init(flooders: [String: Int], maxWait: Duration = FairShareGateTests.interval) {
            self.maxWait = maxWait
            for (caller, workers) in flooders.sorted(by: { $0.key < $1.key }) {
                floodCalls += Array(repeating: (FairShareGateTests.t0, caller), count: workers)
            }
        }

        mutating func arrive(_ caller: String) {
            if !pumping, bucket.reserve(now: now, maxWait: .zero) == .goNow {
                gate.tookAtOnce(caller: caller, weight: 1)
                record(caller, .goNow, arrived: now)
                return
            }
            let ticket = nextTicket
            nextTicket += 1
            if let refusal = gate.arrive(ticket, caller: caller, weight: 1, now: now, deadline: now + maxWait) {
                record(caller, refusal, arrived: now)
                return
            }
            calls[ticket] = (caller, now)
            if !pumping {
                pumping = true
                wakeAt = nil
            }
        }

        mutating func record(_ caller: String, _ reservation: TokenBucket.Reservation, arrived: MonotonicInstant) {
            if caller == "steady" {
                switch reservation {
                case .goNow: steady.append(now - arrived)
                case .goAfter(let wait): steady.append(now + wait - arrived)
                case .refused: steady.append(nil)
                }
            } else {
                flooderAnswers[caller, default: []].append(reservation)
                floodCalls.append((now + Self.turnaround, caller))
            }
        }

        mutating func deliver(_ answers: [FairShareGate<Int>.Answer]) {
            for answer in answers {
                guard let call = calls.removeValue(forKey: answer.ticket) else { continue }
                record(call.caller, answer.reservation, arrived: call.arrived)
            }
        }

        /// The pump runs at `now` until it sleeps or stops.
        mutating func pump() {
            while pumping, wakeAt.map({ $0 <= now }) ?? true {
                wakeAt = nil
                let turn = gate.turn(now: now)
                deliver(turn.answers)
                guard let ask = turn.ask else {
                    pumping = false
                    break
                }
                let reservation = bucket.reserve(now: now, maxWait: ask)
                let outcome = gate.answered(reservation, askedAt: now, now: now)
                deliver(outcome.answers)
                wakeAt = outcome.wakeAt
            }
        }

        /// "steady" calls at each of `arrivals` (in order) while the flood goes on; then runs one second more.
        mutating func run(steadyAt arrivals: [MonotonicInstant]) {
            var pending = arrivals[...]
            let end = (arrivals.last ?? now) + .seconds(1)
            while now <= end {
                let due = floodCalls.filter { $0.at <= now }
                floodCalls.removeAll { $0.at <= now }
                for call in due { arrive(call.caller) }
                if let arrival = pending.first, arrival <= now {
                    pending.removeFirst()
                    arrive("steady")
                }
                pump()
                let next = ([wakeAt, pending.first] + floodCalls.map(\.at)).compactMap { $0 }.min()
                guard let next, next > now, next <= end else { break }
                now = next
            }
        }
    }

    static func granted(_ reservation: TokenBucket.Reservation) -> Bool {
        if case .refused = reservation { false } else { true }
    }

    /// Two calls a second for six seconds, landing at every phase of the token schedule (a token each 100 ms).
    static var steadyArrivals: [MonotonicInstant] {
        (0..<12).map { t0 + .milliseconds(250) + .milliseconds(500 * $0) + .microseconds(8_333 * $0) }
    }

    @Test(arguments: [["flood": 8], ["flood": 200], ["a": 8, "b": 8, "c": 8]])
    func aSteadyCallerBelowItsShareIsServedWithinOneTokenIntervalWhateverOthersKeepWaiting(flooders: [String: Int]) {
        var simulation = Simulation(flooders: flooders)
        simulation.run(steadyAt: Self.steadyArrivals)
        #expect(simulation.steady.count == 12)
        #expect(simulation.steady.allSatisfy { $0 != nil && $0! <= Self.interval }, "\(simulation.steady)")
        // The flood was there all along: each of its callers got tokens and had calls refused.
        for caller in flooders.keys {
            let answers = simulation.flooderAnswers[caller] ?? []
            #expect(answers.contains(where: Self.granted) && answers.contains { !Self.granted($0) })
        }
    }

    @Test func everyTokenIsHandedWhenItComesAndNoneIsPromisedAhead() {
        var simulation = Simulation(flooders: ["flood": 8])
        simulation.run(steadyAt: Self.steadyArrivals)
        let flood = simulation.flooderAnswers["flood", default: []]
        let tokens = flood.count(where: Self.granted) + simulation.steady.count { $0 != nil }
        // The flood keeps calls waiting all along, so the bucket's every token is spent the moment it comes.
        let elapsed = simulation.now - Self.t0
        #expect(tokens == Int(elapsed / Self.interval) + 1)  // the first at once
        #expect(!flood.contains { if case .goAfter = $0 { true } else { false } })
    }
}
