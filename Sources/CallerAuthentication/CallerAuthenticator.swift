import Cryptography
import GatewayCore
import Synchronization

/// Establishes who is calling from a call's `authorization` metadata and its client certificate, and admits
/// or refuses the caller by the `callers` policy. Runs on the event loops: a token seen before costs one
/// SHA-256 and a dictionary lookup (`VerifiedTokenCache`); a new one one signature verification (RS256
/// with a 2048–4096-bit key, or ES256). The JWKS is swapped in by `replaceKeys` (a file watcher, off the loop).
public final class CallerAuthenticator: Sendable {
    /// The bearer token verifier; nil when `authentication.jwt` is not configured.
    public let verifier: BearerTokenVerifier?
    /// The `callers` policy.
    public let policy: CallerPolicy
    private let keys = Mutex<JSONWebKeySet?>(nil)
    private let cache: VerifiedTokenCache
    private let clock: any GatewayClock

    public init(
        verifier: BearerTokenVerifier?, policy: CallerPolicy, clock: any GatewayClock = SystemClock(),
        cacheCapacity: Int = 10_000
    ) {
        self.verifier = verifier
        self.policy = policy
        self.clock = clock
        self.cache = VerifiedTokenCache(capacity: cacheCapacity)
    }

    /// Makes `keys` the JWKS in force; tokens verified under the old one are verified again.
    public func replaceKeys(_ keys: JSONWebKeySet) {
        self.keys.withLock { $0 = keys }
        cache.removeAll()
    }

    /// The outcome of `authenticate`.
    public enum Refusal: Error, Sendable, Hashable {
        case unauthenticated(AuthenticationFailure)
        case permissionDenied(AccessRefusal)
    }

    /// The caller of a call: from a bearer token when the call carries `authorization`, else from the client
    /// certificate's `certificateIdentity`; then admitted by the policy. Nil = anonymous (open mode only).
    public func authenticate(
        authorization: String?, certificateIdentity: String?
    ) -> Result<CallerIdentity?, Refusal> {
        var identity: CallerIdentity?
        if let authorization {
            switch bearerIdentity(authorization) {
            case .success(let subject): identity = CallerIdentity(identity: subject, source: .jwt)
            case .failure(let failure):
                // Open mode keeps today's behaviour: nothing is refused, the call is just anonymous.
                if !policy.isOpen { return .failure(.unauthenticated(failure)) }
            }
        } else if let certificateIdentity, !certificateIdentity.isEmpty {
            identity = CallerIdentity(identity: certificateIdentity, source: .certificate)
        }
        if identity == nil && !policy.isOpen { return .failure(.unauthenticated(.missingCredentials)) }
        return policy.admit(identity).mapError { .permissionDenied($0) }
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
        guard let keys = keys.withLock({ $0 }), !keys.keys.isEmpty else { return .failure(.keysUnavailable) }
        let result = verifier.verify(token, keys: keys, now: now)
        switch result {
        case .success(let verified):
            cache.store(digest, .success(verified.subject), until: verified.expires + verifier.leeway, now: now)
        case .failure(let failure) where failure != .notYetValid && failure != .keysUnavailable:
            // The same bad token again is refused from memory for a minute (a flood costs no signatures).
            cache.store(digest, .failure(failure), until: now + .seconds(60), now: now)
        case .failure:
            break
        }
        return result.map(\.subject)
    }
}

/// Verification outcomes by SHA-256 of the token, each until an expiry; bounded: when full, expired entries
/// go, and if it is still full everything goes (a flood of distinct tokens only costs their verification).
final class VerifiedTokenCache: Sendable {
    private struct Entry: Sendable {
        var result: Result<String, AuthenticationFailure>
        var until: WallTime
    }

    private let entries = Mutex<[[UInt8]: Entry]>([:])
    private let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    func lookup(_ digest: [UInt8], now: WallTime) -> Result<String, AuthenticationFailure>? {
        entries.withLock { entries in
            guard let entry = entries[digest] else { return nil }
            guard now < entry.until else {
                entries[digest] = nil
                return nil
            }
            return entry.result
        }
    }

    func store(_ digest: [UInt8], _ result: Result<String, AuthenticationFailure>, until: WallTime, now: WallTime) {
        entries.withLock { entries in
            if entries.count >= capacity {
                entries = entries.filter { $0.value.until > now }
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[digest] = Entry(result: result, until: until)
        }
    }

    func removeAll() { entries.withLock { $0.removeAll() } }

    var count: Int { entries.withLock { $0.count } }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var view = Substring(self)
        while view.first == " " || view.first == "\t" { view.removeFirst() }
        while view.last == " " || view.last == "\t" { view.removeLast() }
        return String(view)
    }
}
