/// Which CAs the connection to Apple trusts.
///
/// libcurl trusts a CA bundle file (CAINFO) and a hashed CA directory (CAPATH, /etc/ssl/certs on Debian).
/// Setting only the file leaves the system directory trusted, so `apple.caFile` would add to the system
/// CAs instead of pinning; pinning must also clear the directory.
struct UpstreamTrust: Equatable {
    /// The bundle file to set; nil keeps libcurl's default (the system bundle).
    var caBundle: String?
    /// Whether the system CA directory stays trusted.
    var systemDirectory: Bool

    init(caBundle: String?, systemDirectory: Bool) {
        self.caBundle = caBundle
        self.systemDirectory = systemDirectory
    }

    init(caFile: String, trustSystemCAs: Bool) {
        caBundle = caFile.isEmpty ? nil : caFile
        systemDirectory = caFile.isEmpty || trustSystemCAs
    }
}
