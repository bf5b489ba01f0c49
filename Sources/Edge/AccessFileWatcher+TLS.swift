extension AccessFileWatcher {
    /// TLS on the gRPC port (keys under `tls`). Absent: h2c, as before.
    package struct TLS: Sendable, Hashable {
        /// `tls.certificateFile`: the server's PEM certificate chain (leaf first).
        package var certificateFile = ""
        /// `tls.privateKeyFile`: the server's PEM private key.
        package var privateKeyFile = ""
        /// `tls.clientCAFile`: PEM CA certificates that sign client certificates. Set: every client must present
        /// a certificate that verifies against them (mutual TLS). Empty: no client certificate is asked for.
        package var clientCAFile = ""
        /// `tls.identityFromCommonName`: whether a client certificate also proves its subject CN, listed as
        /// `cn:<name>` (default false: only its URI and DNS SANs, which a CA issues as names, identify it).
        package var identityFromCommonName = false
        /// `tls.sessionMaxAge`: how long a TLS session may be resumed, counted from its first full handshake and
        /// never extended by resumptions (nor past the client certificate's `notAfter`); 1s to 168h (RFC 8446
        /// §4.6.1 caps a ticket's lifetime at 7 days), 1h by default.
        package var sessionMaxAge: Duration = .seconds(3_600)

        package init() {}
    }
}
