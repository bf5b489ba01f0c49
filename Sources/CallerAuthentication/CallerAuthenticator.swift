import AppStoreDomain
import Cryptography
import GatewayFoundation

/// Establishes who is calling from a call's `authorization` metadata and its client certificate, and admits
/// or refuses the caller by the `callers` policy. Runs on the event loops: a token seen before costs one
/// SHA-256 and a dictionary lookup (`VerifiedTokenCache`); a new one one signature verification (RS256
/// with a 2048–4096-bit key, or ES256). The JWKS is swapped in by `replaceKeys` (a file watcher, off the loop).
package final class CallerAuthenticator: Sendable {
    /// The bearer token verifier; nil when `authentication.jwt` is not configured.
    package let verifier: BearerTokenVerifier?
    /// True when `callers` is absent (open mode): fixed for the process, so a reload cannot open a closed
    /// gateway or close an open one, and open mode reads no lock.
    package let isOpen: Bool
    /// The `callers` policy in force: replaced by `replacePolicy` (a reload of the configuration file).
    private let policies: Lock<CallerPolicy>
    /// The JWKS in force and the verdicts reached under it.
    let cache: VerifiedTokenCache
    private let clock: any GatewayClock

    package init(
        verifier: BearerTokenVerifier?, policy: CallerPolicy, clock: any GatewayClock = SystemClock(),
        cacheCapacity: Int = 10_000
    ) {
        self.verifier = verifier
        self.isOpen = policy.isOpen
        self.policies = Lock(policy)
        self.clock = clock
        self.cache = VerifiedTokenCache(capacity: cacheCapacity)
    }

    /// Makes `keys` the JWKS in force; tokens verified under the old one are verified again, including those
    /// whose verification under the old keys is still running (their verdicts are not kept).
    package func replaceKeys(_ keys: JSONWebKeySet) {
        cache.replaceKeys(keys)
    }

    /// The `callers` policy in force.
    package var policy: CallerPolicy { policies.withLock { $0 } }

    /// Runs `body` with the policy in force, without copying it out.
    package func withPolicy<Result: Sendable>(_ body: (borrowing CallerPolicy) -> Result) -> Result {
        policies.withLock { body($0) }
    }

    /// Puts `policy` in force for every call from now on; false (nothing changes) when it would switch between
    /// open mode and a `callers` list, which needs a restart.
    @discardableResult
    package func replacePolicy(_ policy: CallerPolicy) -> Bool {
        guard policy.isOpen == isOpen else { return false }
        policies.withLock { $0 = policy }
        return true
    }

    /// The outcome of `authenticate`.
    package enum Refusal: Error, Sendable, Hashable {
        case unauthenticated(AuthenticationFailure)
        case permissionDenied(AccessRefusal)
    }

    /// The caller of a call: from a bearer token (its `sub`) when the call carries `authorization`, else from
    /// the names of its verified client certificate (`CallerName.certificateNames`; nil = no certificate);
    /// then admitted by the policy. Nil = anonymous (open mode only).
    package func authenticate(
        authorization: String?, certificateNames: [CallerName]? = nil
    ) -> Result<CallerIdentity?, Refusal> {
        var names: [CallerName] = []
        if let authorization {
            switch bearerIdentity(authorization) {
            case .success(let subject): names = [.subject(subject)]
            case .failure(let failure):
                // Open mode keeps today's behaviour: nothing is refused, the call is just anonymous.
                if !isOpen { return .failure(.unauthenticated(failure)) }
            }
        } else if let certificateNames {
            guard !certificateNames.isEmpty || isOpen else {
                return .failure(.unauthenticated(.certificateWithoutIdentity))
            }
            names = certificateNames
        }
        if names.isEmpty && !isOpen { return .failure(.unauthenticated(.missingCredentials)) }
        // Open mode admits anyone as its first name: no policy to read.
        if isOpen { return .success(names.first.map { CallerIdentity(name: $0) }) }
        return withPolicy { $0.admit(names) }.mapError { .permissionDenied($0) }
    }

    private func bearerIdentity(_ authorization: String) -> Result<String, AuthenticationFailure> {
        let utf8 = authorization.utf8
        guard utf8.count <= BearerTokenVerifier.maxTokenBytes + 7 else { return .failure(.malformedToken) }
        let scheme = authorization.prefix(7)
        guard scheme.lowercased() == "bearer " else { return .failure(.malformedToken) }
        let token = String(authorization.dropFirst(7)).trimmingSpaces
        guard !token.isEmpty else { return .failure(.malformedToken) }
        guard let verifier else { return .failure(.tokensNotAccepted) }
        let now = clock.wallNow()
        let digest = SHA256.hash(Array(token.utf8))
        if let cached = cache.lookup(digest, now: now) { return cached }
        // The keys with their generation: a verdict reached under them is kept only while they are in force.
        let (keys, generation) = cache.keys()
        guard let keys, !keys.keys.isEmpty else { return .failure(.keysUnavailable) }
        let result = verifier.verify(token, keys: keys, now: now)
        switch result {
        case .success(let verified):
            cache.store(
                digest, .success(verified.subject), until: verified.expires + verifier.leeway, now: now,
                generation: generation)
        case .failure(let failure)
        where failure != .notYetValid && failure != .issuedInFuture && failure != .keysUnavailable:
            // The same bad token again is refused from memory for a minute (a flood costs no signatures).
            cache.store(digest, .failure(failure), until: now + .seconds(60), now: now, generation: generation)
        case .failure:
            break
        }
        return result.map(\.subject)
    }
}

/// The JWKS in force and the verification outcomes reached under it, by SHA-256 of the token, each until an
/// expiry. One lock holds all three (keys, their generation, outcomes), so a reload and a verdict cannot cross:
/// `replaceKeys` bumps the generation and drops every outcome, and `store` keeps an outcome only when the keys
/// it was reached under (`keys()`'s generation) are still in force. A check that read the old keys and
/// finishes after a reload is answered, but never remembered. Bounded: when full, expired entries go, and if it
/// is still full everything goes (a flood of distinct tokens only costs their verification).
final class VerifiedTokenCache: Sendable {
    private struct Entry: Sendable {
        var result: Result<String, AuthenticationFailure>
        var until: WallTime
    }

    private struct State: Sendable {
        var entries: [[UInt8]: Entry] = [:]
        var keys: JSONWebKeySet?
        var generation: UInt64 = 0
    }

    private let state = Lock(State())
    private let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// The keys in force (nil before the first load) and their generation, read together.
    func keys() -> (keys: JSONWebKeySet?, generation: UInt64) {
        state.withLock { ($0.keys, $0.generation) }
    }

    /// Puts `keys` in force as a new generation, forgetting every outcome reached under earlier ones.
    func replaceKeys(_ keys: JSONWebKeySet) {
        state.withLock { state in
            state.keys = keys
            state.generation &+= 1
            state.entries.removeAll()
        }
    }

    func lookup(_ digest: [UInt8], now: WallTime) -> Result<String, AuthenticationFailure>? {
        state.withLock { state in
            guard let entry = state.entries[digest] else { return nil }
            guard now < entry.until else {
                state.entries[digest] = nil
                return nil
            }
            return entry.result
        }
    }

    /// Remembers `result` until `until`, if the keys of `generation` are still in force; false when not.
    @discardableResult
    func store(
        _ digest: [UInt8], _ result: Result<String, AuthenticationFailure>, until: WallTime, now: WallTime,
        generation: UInt64
    ) -> Bool {
        state.withLock { state in
            guard state.generation == generation else { return false }
            if state.entries.count >= capacity {
                state.entries = state.entries.filter { $0.value.until > now }
                if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            }
            state.entries[digest] = Entry(result: result, until: until)
            return true
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var view = Substring(self)
        while view.first == " " || view.first == "\t" { view.removeFirst() }
        while view.last == " " || view.last == "\t" { view.removeLast() }
        return String(view)
    }
}
