import EventLoops

/// The connections of a server still in their handshake (TLS, HTTP/2 preface), counted per client address so
/// that one address cannot fill `maxPendingHandshakes`: its next connection past `limit` pushes out its own
/// oldest pending one (returned to be closed), and the listener never pauses on its account. Other addresses
/// keep their slots. An IPv4 address counts alone; IPv6 addresses count per /64, the block one host is usually
/// given (and can pick addresses from).
///
/// Pure, no I/O: the server's loops share one behind a lock (`ServerCounters`), each reporting what it accepts
/// and what leaves its handshake; `ID` names a pending connection across the loops. It holds one entry per
/// pending connection (bounded by the server's cap on them) and forgets an address with none.
struct PendingHandshakesByAddress<ID: Hashable>: Sendable where ID: Sendable {
    /// Pending connections one address may hold; 0 = no limit.
    let limit: Int
    /// Per address group, its pending connections, oldest first (at most `limit` of them).
    private var pending: [PeerAddress: [ID]] = [:]
    /// The group of each pending connection.
    private var groups: [ID: PeerAddress] = [:]

    init(limit: Int) { self.limit = max(0, limit) }

    /// The addresses counted together: an IPv4 address alone, an IPv6 address with the rest of its /64.
    static func group(of address: PeerAddress) -> PeerAddress {
        address.isIPv4 ? address : PeerAddress(high: address.high, low: 0)
    }

    /// Connections pending from `address`'s group now.
    func count(from address: PeerAddress) -> Int { pending[Self.group(of: address)]?.count ?? 0 }

    /// Pending connections of every address.
    var total: Int { groups.count }

    /// The connection `id` from `address` began its handshake. Past the limit, the group's oldest pending
    /// connection is returned, no longer counted: the caller closes it.
    /// Without a limit nothing is tracked.
    mutating func started(_ id: ID, from address: PeerAddress) -> ID? {
        guard limit > 0, groups[id] == nil else { return nil }
        let group = Self.group(of: address)
        groups[id] = group
        var evicted: ID?
        pending[group, default: []].append(id)
        if limit > 0, let queue = pending[group], queue.count > limit {
            let oldest = queue[0]
            pending[group]?.removeFirst()
            groups[oldest] = nil
            evicted = oldest
        }
        return evicted
    }

    /// The connection `id` left its handshake (established, closed, or closed by its deadline); nothing when it
    /// was not counted (evicted already, or never started).
    mutating func ended(_ id: ID) {
        guard let group = groups.removeValue(forKey: id) else { return }
        pending[group]?.removeAll { $0 == id }
        if pending[group]?.isEmpty == true { pending[group] = nil }
    }
}
