import GatewayFoundation

/// The keys that seal TLS session tickets, as a value: the newest key seals; a key opens tickets until it is
/// `rotation + lifetime` old, so a ticket sealed just before a rotation stays good for its whole lifetime, and
/// no key outlives that. A ticket opened with a key other than the newest is renewed (sealed again with it).
///
/// Pure: `SessionTicketKeys` supplies fresh random keys and the time, and performs the sealing with OpenSSL.
struct TicketKeySchedule: Sendable {
    /// One ticket key.
    struct Key: Sendable, Equatable {
        /// The 16 bytes that name the key inside every ticket it seals (random, like the rest).
        var name: [UInt8]
        /// 32 bytes of AES-256-CBC key, then 32 bytes of HMAC-SHA256 key.
        var secret: [UInt8]
        /// When it was made.
        var created: MonotonicInstant
    }

    /// How long the newest key seals before a fresh one replaces it.
    let rotation: Duration
    /// How long a session (and so a ticket) may be resumed after it was sealed.
    let lifetime: Duration
    /// Newest first.
    private(set) var keys: [Key] = []

    init(rotation: Duration, lifetime: Duration) {
        self.rotation = rotation
        self.lifetime = lifetime
    }

    /// The key that seals a ticket at `now`: the newest one, or one made by `fresh` (with `created` = `now`)
    /// when there is none or the newest is `rotation` old. Keys too old to open anything are dropped.
    mutating func sealingKey(now: MonotonicInstant, fresh: () -> Key) -> Key {
        let (rotation, lifetime) = (rotation, lifetime)
        keys.removeAll { now >= $0.created + rotation + lifetime }
        if let newest = keys.first, now < newest.created + rotation { return newest }
        var key = fresh()
        key.created = now
        keys.insert(key, at: 0)
        return key
    }

    /// The key named `name` if it may still open a ticket at `now`, and whether the ticket should be renewed
    /// (it was sealed with a key that no longer seals); nil for an unknown or expired key (a full handshake).
    func openingKey(named name: some Collection<UInt8>, now: MonotonicInstant) -> (key: Key, renew: Bool)? {
        guard let index = keys.firstIndex(where: { $0.name.elementsEqual(name) }), opens(keys[index], at: now) else {
            return nil
        }
        return (keys[index], index != 0 || now >= keys[index].created + rotation)
    }

    private func opens(_ key: Key, at now: MonotonicInstant) -> Bool {
        now < key.created + rotation + lifetime
    }
}
