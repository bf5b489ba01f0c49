/// Why a connection or a pipeline failed; the connection is closed after any of these.
package struct RedisConnectionFailure: Error, Sendable {
    package var kind: RedisFailureKind
    package var message: String

    package init(kind: RedisFailureKind, message: String) {
        self.kind = kind
        self.message = message
    }
}
