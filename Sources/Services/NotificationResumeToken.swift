import AppStoreDomain
import GatewayFoundation

/// Where a notification stream stands after one event: enough to continue right after it on any replica,
/// after any restart (Apple's paging state is in the token, none is kept by the gateway).
struct NotificationResumeToken: Sendable, Hashable {
    /// Apple's `paginationToken` that fetched the event's page ("" = the first page, fetched without one).
    var pageToken: String
    /// The event's position in that page (0-based): a resumed stream refetches the page and skips through it.
    var index: Int
    /// The environment that answered (later pages are pinned to it).
    var environment: AppleEnvironment
    /// The bundle id of the app.
    var bundleID: String
    /// SHA-256 of the stream's filters (`NotificationFilters.fingerprint`): a token only resumes its own stream.
    var filterHash: [UInt8]
    /// The event's `signedDate` (UNIX ms), for a restart from a date when Apple's token expired.
    var eventSignedDate: Int64
    /// When the token was issued (UNIX ms, the gateway's clock).
    var issuedAt: Int64
}

/// The wire form of `NotificationResumeToken`: base64url of
/// `version(1)=1 | issuedAt(i64) | environment(u8) | index(u32) | eventSignedDate(i64) | filterHash(32)
///  | bundleID(u16 length + UTF-8) | pageToken(u32 length + UTF-8) | HMAC-SHA256(key, all of the above)(32)`,
/// integers big-endian. The MAC makes the token tamper-evident: the gateway trusts its fields only after
/// checking it (constant-time), so a forged or garbled token is INVALID_ARGUMENT and never reaches Apple.
struct ResumeTokenCodec: Sendable {
    static let version: UInt8 = 1
    private let envelope: ResumeTokenEnvelope

    /// A codec sealing with `ring`'s first key, opening with any of its keys (replicas share the ring), and
    /// refusing tokens issued longer than `maxAge` ago.
    init(ring: ResumeTokenKeyRing, maxAge: Duration) { envelope = ResumeTokenEnvelope(ring: ring, maxAge: maxAge) }

    func encode(_ token: NotificationResumeToken) -> String {
        var body = TokenWriter()
        body.integer(UInt64(Self.version), width: 1)
        body.integer(UInt64(bitPattern: token.issuedAt), width: 8)
        body.integer(token.environment == .production ? 0 : 1, width: 1)
        body.integer(UInt64(UInt32(clamping: token.index)), width: 4)
        body.integer(UInt64(bitPattern: token.eventSignedDate), width: 8)
        body.raw(token.filterHash)
        body.text(token.bundleID, lengthWidth: 2)
        body.text(token.pageToken, lengthWidth: 4)
        return envelope.seal(body)
    }

    /// The token behind `text`; INVALID_ARGUMENT (field `resume_token`) when it is not one this gateway
    /// family issued, was altered, or is truncated, and RESUME_TOKEN_EXPIRED when it is older than the
    /// envelope's `maxAge` at `now`.
    func decode(_ text: String, now: WallTime) throws(GatewayError) -> NotificationResumeToken {
        let invalid = GatewayError.invalidArgument(
            field: "resume_token",
            problem: "is not a resume token issued by this gateway (garbled, altered, or signed with a key not in "
                + "its notifications.resumeTokenKeyFile ring); "
                + "pass a NotificationEvent.resume_token unchanged, or start from a start_date")
        guard var reader = envelope.open(text, minimumBodyBytes: 1 + 8 + 1 + 4 + 8 + 32 + 2 + 4 + 1),
            reader.integer(1) == UInt64(Self.version), let issued = reader.integer(8),
            let environment = reader.integer(1), environment <= 1, let index = reader.integer(4),
            let signed = reader.integer(8), let hash = reader.bytes(32),
            let bundleID = reader.text(lengthWidth: 2), let pageToken = reader.text(lengthWidth: 4), reader.isAtEnd
        else { throw invalid }
        try envelope.checkAge(
            issuedAt: Int64(bitPattern: issued), now: now, restartFrom: Int64(bitPattern: signed))
        return NotificationResumeToken(
            pageToken: pageToken, index: Int(index), environment: environment == 0 ? .production : .sandbox,
            bundleID: bundleID, filterHash: hash, eventSignedDate: Int64(bitPattern: signed),
            issuedAt: Int64(bitPattern: issued))
    }
}
