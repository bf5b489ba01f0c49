/// One `NOTIFY` (or `pg_notify`) the server delivered on a channel this connection listens on.
public struct PostgresNotification: Sendable, Hashable {
    public let channel: String
    /// The payload (empty when none was given; at most 8000 bytes, the server's limit).
    public let payload: String
    /// The process id of the server session that sent it.
    public let senderPID: Int32

    public init(channel: String, payload: String, senderPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.senderPID = senderPID
    }
}

/// What a subscription (`PostgresConnection.listen`) yields.
public enum PostgresListenEvent: Sendable, Hashable {
    case notification(PostgresNotification)
    /// The connection was replaced and listens again: notifications sent while it was down were missed.
    case resubscribed
}
