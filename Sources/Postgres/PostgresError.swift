/// Why a PostgreSQL call failed. Every failure is one of these values: nothing the server sends (an error, a
/// malformed or huge result, a dropped connection) traps or escapes as another type.
package struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for callers that decide by it (and the `kind` label of the error counter).
    package enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The server answered the statement with an error: `sqlState` and `message` are the server's.
        case server
        /// The connection broke while the call was in flight: whether the statement ran is unknown.
        case connectionLost = "connection_lost"
        /// The call was issued while the connection was down (it is being replaced): nothing was sent.
        case notConnected = "not_connected"
        /// A connection attempt failed: unreachable, refused, authentication, TLS, or a connect timeout.
        case refused
        /// The call's deadline passed; a cancel request was sent to the server for a statement in flight.
        case timeout
        /// The caller's task was cancelled; as for `timeout`, a statement in flight is cancelled on the server.
        case cancelled
        /// The result passed a bound (`PostgresResultLimits`): the call fails and the rest of it is discarded.
        case resultTooLarge = "result_too_large"
        /// The connection string (URI or `key=value` list) cannot be parsed, or names an option libpq lacks.
        case invalidURI = "invalid_uri"
        /// libpq refused to send the statement (too many parameters, out of memory), or the call was misused.
        case invalidRequest = "invalid_request"
        /// A cell could not be decoded as the caller asked (`PostgresCell`).
        case decoding
        /// The connection (or its pool) was closed by its owner, or its event loop stopped.
        case closed
    }

    package var kind: Kind
    /// The SQLSTATE of a server error (`23505` unique violation, `57014` query cancelled, …), nil otherwise.
    package var sqlState: String?
    /// The server's primary message, or what the client saw.
    package var message: String
    /// The server's DETAIL line, if any.
    package var detail: String?
    /// The constraint a server error names, if any.
    package var constraint: String?
    /// The server's function that raised the error (its source routine), if the server named it: what tells
    /// errors that share a broad SQLSTATE apart without reading a translated message.
    package var sourceFunction: String?

    package init(
        _ kind: Kind, _ message: String, sqlState: String? = nil, detail: String? = nil, constraint: String? = nil,
        sourceFunction: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.constraint = constraint
        self.sourceFunction = sourceFunction
    }

    package var description: String {
        var text = "PostgreSQL \(kind.rawValue)"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        return text
    }

    /// Whether the server refused a statement because it violated a unique constraint (SQLSTATE 23505).
    package var isUniqueViolation: Bool { sqlState == "23505" }
    /// Whether the server rolled the transaction back as a serialization failure or deadlock (40001, 40P01): the
    /// caller may retry it.
    package var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// The server refused a prepared statement whose result no longer fits its plan ("cached plan must not change
    /// result type"): preparing it again mends it. SQLSTATE 0A000 alone means any unsupported feature, so the
    /// server's routine must be the plan cache's too (PostgreSQL names it in every error; the message is
    /// translated and never read). An error that names no routine is not taken for one: it fails its call.
    package var isStalePlan: Bool { sqlState == "0A000" && sourceFunction == "RevalidateCachedQuery" }
}
