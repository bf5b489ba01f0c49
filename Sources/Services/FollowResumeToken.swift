import AppStoreDomain
import GatewayFoundation
import NotificationStore

/// Where a followed stream stands after one event, in its catch-up or its live part: enough to continue
/// right after it on any replica sharing the store (Redis), or after a restart of the one holding it (SQLite).
///
/// The catch-up merges two sorted sources, Apple's history pages and the store's entries of the window
/// (those stored up to `snapshot`), so it keeps one cursor in each; the live part keeps a store position.
struct FollowPosition: Sendable, Hashable {
    var bundleID: String
    /// SHA-256 of the stream's filters: a token only resumes its own stream.
    var filterHash: [UInt8]
    /// The end of the catch-up window (UNIX ms), fixed when the stream first started.
    var windowEnd: Int64
    /// Store entries at or before it belong to the catch-up; later ones are live.
    var snapshot: StorePosition
    /// Whether the catch-up is over.
    var live = false
    /// The last Apple history event consumed: its page's token ("" = first page) and index; nil = none yet.
    var apple: ApplePosition?
    /// Apple's history is exhausted.
    var appleDone = false
    /// The last store entry of the catch-up consumed; nil = none yet.
    var storeKey: WindowKey?
    /// The last live entry consumed (starts at `snapshot`).
    var liveCursor: StorePosition
    /// When the token was issued (UNIX ms).
    var issuedAt: Int64 = 0

    struct ApplePosition: Sendable, Hashable {
        var pageToken: String
        var index: Int
        var environment: AppleEnvironment
    }

    init(bundleID: String, filterHash: [UInt8], windowEnd: Int64, snapshot: StorePosition) {
        self.bundleID = bundleID
        self.filterHash = filterHash
        self.windowEnd = windowEnd
        self.snapshot = snapshot
        self.liveCursor = snapshot
    }
}

/// The wire form of `FollowPosition`: base64url of
/// `version(1)=2 | issuedAt(i64) | flags(u8: live, appleDone, hasApple, hasStoreKey) | windowEnd(i64)
///  | snapshot(2×u64) | liveCursor(2×u64) | storeKey(i64 + 2×u64) | appleEnvironment(u8) | appleIndex(u32)
///  | filterHash(32) | bundleID(u16 length + UTF-8) | applePageToken(u32 length + UTF-8) | HMAC-SHA256(32)`,
/// integers big-endian, authenticated with the same key ring as history tokens (a different version byte,
/// so neither kind passes for the other).
struct FollowTokenCodec: Sendable {
    static let version: UInt8 = 2
    private let envelope: ResumeTokenEnvelope

    init(ring: ResumeTokenKeyRing, maxAge: Duration) { envelope = ResumeTokenEnvelope(ring: ring, maxAge: maxAge) }

    func encode(_ position: FollowPosition) -> String {
        var body = TokenWriter()
        body.integer(UInt64(Self.version), width: 1)
        body.integer(UInt64(bitPattern: position.issuedAt), width: 8)
        var flags: UInt64 = 0
        if position.live { flags |= 1 }
        if position.appleDone { flags |= 2 }
        if position.apple != nil { flags |= 4 }
        if position.storeKey != nil { flags |= 8 }
        body.integer(flags, width: 1)
        body.integer(UInt64(bitPattern: position.windowEnd), width: 8)
        for value in [
            position.snapshot.major, position.snapshot.minor, position.liveCursor.major, position.liveCursor.minor,
        ] {
            body.integer(value, width: 8)
        }
        let storeKey = position.storeKey ?? WindowKey(signedDate: 0, position: .zero)
        body.integer(UInt64(bitPattern: storeKey.signedDate), width: 8)
        body.integer(storeKey.position.major, width: 8)
        body.integer(storeKey.position.minor, width: 8)
        body.integer(position.apple?.environment == .sandbox ? 1 : 0, width: 1)
        body.integer(UInt64(UInt32(clamping: position.apple?.index ?? 0)), width: 4)
        body.raw(position.filterHash.count == 32 ? position.filterHash : [UInt8](repeating: 0, count: 32))
        body.text(position.bundleID, lengthWidth: 2)
        body.text(position.apple?.pageToken ?? "", lengthWidth: 4)
        return envelope.seal(body)
    }

    /// The position behind `text`; INVALID_ARGUMENT (field `resume_token`) unless this gateway family
    /// issued it for a followed stream, unaltered, and RESUME_TOKEN_EXPIRED when it is older than the
    /// envelope's `maxAge` at `now`.
    func decode(_ text: String, now: WallTime) throws(GatewayError) -> FollowPosition {
        let invalid = GatewayError.invalidArgument(
            field: "resume_token",
            problem: "is not a resume token of a followed stream issued by this gateway (garbled, altered, from a "
                + "stream without follow, or signed with a key not in its notifications.resumeTokenKeyFile ring); "
                + "pass a NotificationEvent.resume_token unchanged")
        guard var reader = envelope.open(text, minimumBodyBytes: 1 + 8 + 1 + 8 + 32 + 24 + 1 + 4 + 32 + 2 + 4),
            reader.integer(1) == UInt64(Self.version), let issued = reader.integer(8), let flags = reader.integer(1),
            let windowEnd = reader.integer(8), let snapshotMajor = reader.integer(8),
            let snapshotMinor = reader.integer(8),
            let liveMajor = reader.integer(8), let liveMinor = reader.integer(8), let keyDate = reader.integer(8),
            let keyMajor = reader.integer(8), let keyMinor = reader.integer(8), let environment = reader.integer(1),
            environment <= 1, let index = reader.integer(4), let hash = reader.bytes(32),
            let bundleID = reader.text(lengthWidth: 2), let pageToken = reader.text(lengthWidth: 4), reader.isAtEnd
        else { throw invalid }
        try envelope.checkAge(issuedAt: Int64(bitPattern: issued), now: now, restartFrom: nil)
        var position = FollowPosition(
            bundleID: bundleID, filterHash: hash, windowEnd: Int64(bitPattern: windowEnd),
            snapshot: StorePosition(major: snapshotMajor, minor: snapshotMinor))
        position.issuedAt = Int64(bitPattern: issued)
        position.live = flags & 1 != 0
        position.appleDone = flags & 2 != 0
        if flags & 4 != 0 {
            position.apple = .init(
                pageToken: pageToken, index: Int(index), environment: environment == 0 ? .production : .sandbox)
        }
        if flags & 8 != 0 {
            position.storeKey = WindowKey(
                signedDate: Int64(bitPattern: keyDate), position: StorePosition(major: keyMajor, minor: keyMinor))
        }
        position.liveCursor = StorePosition(major: liveMajor, minor: liveMinor)
        return position
    }
}

/// The catch-up merge as a pure decision: given the head of each source, what to do next. Both sources
/// are in signedDate order; a store entry goes before an Apple event of the same date, so when both hold
/// one notification the store's copy is the one emitted (the Apple copy is then skipped by UUID).
enum FollowMerge {
    enum Step: Equatable {
        /// Fetch the next Apple history page.
        case fetchApple
        /// Fetch the next store entries of the window.
        case fetchStore
        case emitStore
        case emitApple
        /// Both sources are exhausted: go live.
        case catchUpDone
    }

    static func next(appleHead: Int64?, appleDone: Bool, storeHead: Int64?, storeDone: Bool) -> Step {
        if storeHead == nil && !storeDone { return .fetchStore }
        if appleHead == nil && !appleDone { return .fetchApple }
        switch (appleHead, storeHead) {
        case (nil, nil): return .catchUpDone
        case (nil, _?): return .emitStore
        case (_?, nil): return .emitApple
        case (let apple?, let store?): return store <= apple ? .emitStore : .emitApple
        }
    }
}
