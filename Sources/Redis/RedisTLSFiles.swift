/// The PEM files of a `rediss://` connection: `redis.caFile` (the CAs that verify the server; "" = the
/// system's), and `redis.certFile` / `redis.keyFile` (a client certificate, for a Redis with
/// `tls-auth-clients yes`; "" = none). Read at each connect, so rotated files take effect on the next one.
package struct RedisTLSFiles: Sendable, Hashable {
    /// `redis.caFile`.
    package var caFile: String
    /// `redis.certFile`.
    package var certFile: String
    /// `redis.keyFile`.
    package var keyFile: String

    /// The given files.
    package init(caFile: String = "", certFile: String = "", keyFile: String = "") {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
    }
}
