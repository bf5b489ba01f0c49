/// What this build is: the one place the gateway's version is written. `appstore-gateway --version` prints it
/// and `appstore_gateway_build_info{version=…}` carries it; the Dockerfile's `VERSION`, the manifests' image
/// tags and CHANGELOG.md's newest release repeat it, and a test keeps them equal.
public enum BuildInfo {
    /// The gateway's version (the image tag of the release), semantic versioning of the gRPC contract
    /// `appstore.gateway.v1`: the major version is the contract's (README "Compatibility").
    public static let version = "1.0.0"
    /// The Swift language mode the compiler was, coarsely.
    public static var swiftVersion: String {
        #if compiler(>=6.2)
            "6.2"
        #elseif compiler(>=6.1)
            "6.1"
        #else
            "6.0"
        #endif
    }
}
