import AppStoreDomain

extension GatewayConfiguration {
    /// Reads `verification.signatureCacheSize`: how many JWS whose ES256 signature verified the verifier
    /// remembers (by a SHA-256 of the signing input's digest and the signature, about 64 bytes each), so one
    /// seen again costs no ECDSA; every other check still runs on each verification. 0 disables the cache
    /// (benchmarks of the signature path use it).
    static func signatureCacheSize(_ reader: ConfigurationReader) throws(ConfigurationError) -> Int? {
        try reader.integer("verification.signatureCacheSize", in: 0...1_000_000)
    }
}
