import GatewayFoundation

/// The cache state for one identity, as a value: which token to reuse, and when not to.
package struct JWTCacheEntry: Sendable, Hashable {
    /// The current token, nil before the first mint or after `invalidate`.
    package private(set) var current: SignedJWT?

    /// An empty entry.
    package init() {}

    /// The cached token if it may still be used at `now` (before its refresh time).
    package func usableToken(now: WallTime) -> SignedJWT? {
        guard let current, now < current.refreshAt else { return nil }
        return current
    }

    /// Stores a freshly minted token.
    package mutating func store(_ token: SignedJWT) { current = token }

    /// Drops `token` after Apple rejected it with 401. A different (newer) token is kept, so a
    /// burst of 401s for the same old token causes one re-mint, not one per response.
    package mutating func invalidate(token: String) {
        if current?.token == token { current = nil }
    }
}

/// Request JWTs per (issuer, key id, bundle id), minted at most once per refresh period.
///
/// Each identity has its own lock; a caller that finds no usable token mints while holding it, so
/// concurrent callers for the same identity wait for that single mint and then reuse its result,
/// while other identities are not held up. Minting is one ES256 signature (tens of microseconds).
/// If the mint throws, nothing is cached and the next caller tries again.
package final class JWTCache: Sendable {
    private final class Slot: Sendable {
        let entry = Lock(JWTCacheEntry())
    }

    private let settings: JWTSettings
    private let slots = Lock<[JWTIdentity: Slot]>([:])

    /// A cache minting with `settings`.
    package init(settings: JWTSettings = .defaults) {
        self.settings = settings
    }

    /// A token for `identity` usable at `now`: the cached one, or a new one from `signer`.
    package func token(for identity: JWTIdentity, now: WallTime, signer: some ES256Signer) throws -> SignedJWT {
        let slot = slot(for: identity)
        return try slot.entry.withLock { entry throws -> SignedJWT in
            if let cached = entry.usableToken(now: now) { return cached }
            let minted = try AppStoreJWT.mint(identity: identity, now: now, settings: settings, signer: signer)
            entry.store(minted)
            return minted
        }
    }

    /// Apple answered 401 to `token`: the next `token(for:)` call mints a new one.
    package func invalidate(_ identity: JWTIdentity, token: String) {
        slot(for: identity).entry.withLock { $0.invalidate(token: token) }
    }

    private func slot(for identity: JWTIdentity) -> Slot {
        slots.withLock { slots in
            if let slot = slots[identity] { return slot }
            let slot = Slot()
            slots[identity] = slot
            return slot
        }
    }
}
