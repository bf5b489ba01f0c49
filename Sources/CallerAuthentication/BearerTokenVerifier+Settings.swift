extension BearerTokenVerifier {
    /// Bearer JWTs signed by keys of a JWKS file (e.g. Kubernetes service-account tokens).
    package struct Settings: Sendable, Hashable {
        /// `authentication.jwt.jwksFile`: a JSON Web Key Set with RS256 and ES256 public keys; re-read when
        /// it changes (also through a symlink swap, as a projected ConfigMap updates).
        package var jwksFile = ""
        /// `authentication.jwt.issuer`: the `iss` every token must carry.
        package var issuer = ""
        /// `authentication.jwt.audiences`: a token's `aud` must name at least one of these.
        package var audiences: [String] = []
        /// `authentication.jwt.maxLifetime`: the longest lifetime accepted, `exp - iat` (`exp - now` without
        /// `iat`); 24h by default, at most 366 days. Bounds how long a leaked token is worth anything.
        package var maxLifetime: Duration = .seconds(86_400)

        package init() {}
    }
}
