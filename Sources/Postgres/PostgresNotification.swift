/// One `NOTIFY` (or `pg_notify`) the server delivered on a channel this connection listens on.
package struct PostgresNotification: Sendable, Hashable {
    package let channel: String
    /// The payload (empty when none was given; at most 8000 bytes, the server's limit).
    package let payload: String
    /// The process id of the server session that sent it.
    package let senderPID: Int32

    package init(channel: String, payload: String, senderPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.senderPID = senderPID
    }
}

/// What a subscription (`PostgresConnection.listen`) yields.
package enum PostgresListenEvent: Sendable, Hashable {
    case notification(PostgresNotification)
    /// The connection was replaced and listens again: notifications sent while it was down were missed.
    case resubscribed
}
