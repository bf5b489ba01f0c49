// swift-tools-version:6.0
// libFuzzer targets for the gateway's parsers of untrusted bytes. Built only by `make fuzz` with
// `-sanitize=fuzzer,address -parse-as-library`; each executable exports LLVMFuzzerTestOneInput.
import PackageDescription

let surface: Target.Dependency = .product(name: "GatewayFuzzSurface", package: "appstore-gateway")

let package = Package(
    name: "appstore-gateway-fuzz",
    platforms: [.macOS(.v15)],
    // Named, because a path dependency's identity is otherwise its directory name (each worktree differs).
    dependencies: [.package(name: "appstore-gateway", path: "..")],
    targets: [
        .executableTarget(name: "fuzz-deframer", dependencies: [surface]),
        .executableTarget(name: "fuzz-proto", dependencies: [surface]),
        .executableTarget(name: "fuzz-jws", dependencies: [surface]),
        .executableTarget(name: "fuzz-config", dependencies: [surface]),
        .executableTarget(name: "fuzz-apple-error", dependencies: [surface]),
        // Caller authentication: bearer tokens against generated keys, and JWKS documents.
        .executableTarget(name: "fuzz-bearer", dependencies: [surface]),
        // Online checks: OCSP responses and requests, and Xcode JWS decoded without a signature check.
        .executableTarget(name: "fuzz-ocsp", dependencies: [surface]),
        // The RPC handlers from request bytes, with the built-in simulator as Apple.
        .executableTarget(name: "fuzz-verify-handler", dependencies: [surface]),
        .executableTarget(name: "fuzz-history-handler", dependencies: [surface]),
        .executableTarget(name: "fuzz-notifications-handler", dependencies: [surface]),
        // The App Store Server API RPCs and offer signatures (the first byte picks the method).
        .executableTarget(name: "fuzz-api-handlers", dependencies: [surface]),
        // The notification webhook's handler from request bodies.
        .executableTarget(name: "fuzz-webhook-handler", dependencies: [surface]),
        // The HTTP/1.1 request parser (webhook and admin ports) over bytes in arbitrary pieces.
        .executableTarget(name: "fuzz-http1", dependencies: [surface]),
        // Redis replies (the shared budget's and the notification store's server) within their bounds.
        .executableTarget(name: "fuzz-redis-reply", dependencies: [surface]),
    ]
)
