import EventLoops
import Testing

@testable import HTTPServer

/// The per-address accounting of connections in their handshake, driven by hand: no socket, no loop.
@Suite struct PendingHandshakesByAddressTests {
    static let attacker = PeerAddress(ipv4: 0x7f00_0002)  // 127.0.0.2
    static let client = PeerAddress(ipv4: 0x7f00_0001)  // 127.0.0.1

    @Test func anAddressPastItsLimitPushesOutItsOwnOldestAndNoOneElses() {
        var pending = PendingHandshakesByAddress<Int>(limit: 3)
        #expect(pending.started(100, from: Self.client) == nil)
        for id in 1...3 { #expect(pending.started(id, from: Self.attacker) == nil) }
        #expect(pending.count(from: Self.attacker) == 3)
        // The fourth from the same address closes the first, the fifth the second: the client keeps its slot.
        #expect(pending.started(4, from: Self.attacker) == 1)
        #expect(pending.started(5, from: Self.attacker) == 2)
        #expect(pending.count(from: Self.attacker) == 3)
        #expect(pending.count(from: Self.client) == 1)
        #expect(pending.total == 4)
    }

    @Test func aThousandSilentSocketsFromOneAddressHoldOnlyTheLimit() {
        var pending = PendingHandshakesByAddress<Int>(limit: 32)
        var evicted: [Int] = []
        for id in 0..<1_100 {
            if let out = pending.started(id, from: Self.attacker) { evicted.append(out) }
        }
        #expect(pending.total == 32)
        #expect(evicted == Array(0..<1_068))  // always the oldest, in order
        #expect(pending.started(5_000, from: Self.client) == nil)
    }

    @Test func endedHandshakesFreeTheirSlotAndUnknownOnesChangeNothing() {
        var pending = PendingHandshakesByAddress<Int>(limit: 2)
        _ = pending.started(1, from: Self.attacker)
        _ = pending.started(2, from: Self.attacker)
        pending.ended(1)
        #expect(pending.started(3, from: Self.attacker) == nil)
        #expect(pending.started(4, from: Self.attacker) == 2)
        pending.ended(2)  // evicted already: not counted twice
        pending.ended(99)  // never started
        #expect(pending.count(from: Self.attacker) == 2)
        pending.ended(3)
        pending.ended(4)
        #expect(pending.total == 0 && pending.count(from: Self.attacker) == 0)
        // A repeated start of a pending connection is one connection, not two.
        _ = pending.started(7, from: Self.client)
        #expect(pending.started(7, from: Self.client) == nil)
        #expect(pending.count(from: Self.client) == 1)
    }

    @Test func zeroMeansNoLimit() {
        var pending = PendingHandshakesByAddress<Int>(limit: 0)
        for id in 0..<10_000 { #expect(pending.started(id, from: Self.attacker) == nil) }
        // Nothing is tracked without a limit (so ending a handshake costs nothing under the shared lock).
        #expect(pending.count(from: Self.attacker) == 0 && pending.total == 0)
        pending.ended(5)
        #expect(pending.total == 0)
    }

    @Test func ipv6CountsPerSlash64AndIPv4MappedIsIPv4() {
        var pending = PendingHandshakesByAddress<Int>(limit: 1)
        let host = PeerAddress(high: 0x2001_0db8_0000_0001, low: 1)
        let sameNetwork = PeerAddress(high: 0x2001_0db8_0000_0001, low: 0xdead_beef)
        let otherNetwork = PeerAddress(high: 0x2001_0db8_0000_0002, low: 1)
        #expect(pending.started(1, from: host) == nil)
        #expect(pending.started(2, from: sameNetwork) == 1)
        #expect(pending.started(3, from: otherNetwork) == nil)
        #expect(PeerAddress(ipv4: 0x0a00_0001).isIPv4)
        #expect(!host.isIPv4)
        // Two IPv4 addresses never share a group, however close.
        #expect(pending.started(4, from: PeerAddress(ipv4: 0x0a00_0001)) == nil)
        #expect(pending.started(5, from: PeerAddress(ipv4: 0x0a00_0002)) == nil)
    }
}
