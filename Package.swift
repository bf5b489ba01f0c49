// swift-tools-version:6.0
// appstore-gateway: a shared gRPC gateway to Apple's App Store Server API.
// The C libraries (nghttp2, protobuf-c, OpenSSL, libcurl) are the stack; Swift packages are kept few
// so a cold CI build stays short.
import Foundation
import PackageDescription

let package = Package(
    name: "appstore-gateway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "appstore-gateway", targets: ["AppStoreGatewayCLI"]),
        .executable(name: "verify-benchmark", targets: ["VerifyBenchmark"]),
        .executable(name: "log-benchmark", targets: ["LogBenchmark"]),
        .executable(name: "state-seed", targets: ["StateSeed"]),
        // Not an API: the modules the libFuzzer package in fuzz/ drives (a path dependency sees products only), through
        // `@testable import`, as most declarations are `package` (docs/ARCHITECTURE.md, "Rules the layout keeps").
        .library(
            name: "GatewayFuzzSurface",
            targets: [
                "GatewayFoundation", "AppStoreDomain", "Configuration", "ProtoCodec", "SignedData", "GRPC", "Services",
                "ServiceHarness", "CallerAuthentication",
                "Cryptography", "EventLoops", "HTTPServer", "Redis", "AppStoreClient", "Edge", "GatewayApp",
            ]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // 1.16: `LogHandler.log(event:)`, which the JSON log handler implements.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
    ],
    targets: [
        // MARK: C libraries: a modulemap and a shim.h of static inline wrappers each.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        // ThreadSanitizer's acquire/release hooks (weak: no-ops unless its runtime is linked in), for `Lock`.
        .systemLibrary(name: "CThreadSanitizer", path: "Sources/CThreadSanitizer"),
        .systemLibrary(
            name: "CNGHTTP2", path: "Sources/CNGHTTP2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(
            name: "CProtobufC", path: "Sources/CProtobufC", pkgConfig: "libprotobuf-c",
            providers: [.apt(["libprotobuf-c-dev"])]),
        // The one C file of the shims: OpenSSL's process-wide set-up, run before `main` (startup.c).
        .target(name: "COpenSSL", path: "Sources/COpenSSL"),
        .systemLibrary(
            name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CHiredis", path: "Sources/CHiredis", pkgConfig: "hiredis",
            providers: [.apt(["libhiredis-dev"])]),
        // No pkgConfig: sqlite3.pc's -D_FILE_OFFSET_BITS=64 is a flag SwiftPM refuses (and warns about);
        // the header is in /usr/include and the modulemap links libsqlite3.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // Committed protoc-c output for proto/ (scripts/gen-protos.sh regenerates it).
        .target(name: "CGatewayProtos", dependencies: ["CProtobufC"]),

        // MARK: Swift modules, one per layer.
        // The domain-free foundation: clocks and time arithmetic, Base64, the JSON reader, checked numbers,
        // threads, `Lock` (ThreadSanitizer's hooks), the byte queue, W3C trace context, the seeded SplitMix64
        // generator. Imports no project module.
        .target(name: "GatewayFoundation", dependencies: ["CLinux", "CThreadSanitizer"]),
        // The metrics every layer records into directly: a registry of counter, gauge and histogram families by
        // name and help, with labels, and per-loop cells for what a loop counts per call. No exposition format
        // (Observability renders it), no project module but GatewayFoundation.
        .target(name: "Metrics", dependencies: ["GatewayFoundation"]),
        // The App Store domain: Apple's endpoints, environments and error codes, `GatewayError`, rate budgets and
        // fair shares, request JWTs, retry policy, callers. No transport, no YAML.
        .target(name: "AppStoreDomain", dependencies: ["GatewayFoundation"]),
        // Swift value types for every proto message, encoded and decoded through protobuf-c; `ProtoJSON`, the
        // canonical proto3 JSON of any of them.
        .target(name: "ProtoCodec", dependencies: ["CGatewayProtos", "CProtobufC"]),
        // The subscription-state reducer: Apple's signed transaction and renewal snapshots folded into one record
        // per subscription (newest signedDate wins), and the status and entitlements derived from it at a given
        // instant. Pure values: no I/O, no clock reads.
        .target(name: "SubscriptionState", dependencies: ["GatewayFoundation", "ProtoCodec"]),
        // OpenSSL 3 behind Swift owners: EC keys, ES256, X.509 certificates, chain validation, test PKI.
        .target(name: "Cryptography", dependencies: ["COpenSSL", "GatewayFoundation"]),
        // Apple's signed-data (JWS) verification: chain of trust, ES256, app and environment binding.
        .target(
            name: "SignedData",
            dependencies: ["Cryptography", "GatewayFoundation", "AppStoreDomain", "ProtoCodec"]),
        // Who calls: bearer JWTs (RS256/ES256) against a JWKS file, verified-token cache.
        .target(
            name: "CallerAuthentication",
            dependencies: ["Cryptography", "GatewayFoundation", "AppStoreDomain"]),
        // epoll event loops: timers, sockets, `LoopBound` confinement. Knows no protocol.
        .target(name: "EventLoops", dependencies: ["CLinux", "GatewayFoundation"]),
        // A generic HTTP server on the event loops: nghttp2 sessions, TLS (OpenSSL), strict HTTP/1.1.
        .target(
            name: "HTTPServer",
            dependencies: ["CLinux", "CNGHTTP2", "COpenSSL", "Cryptography", "GatewayFoundation", "EventLoops"]),
        // gRPC over the HTTP/2 server: framing, routing, deadlines, status types and details, health; each call's
        // metrics (go-grpc-prometheus names, per-loop cells), its SERVER span (through `Tracer`) and the access-log
        // seam (`AccessLog`).
        .target(
            name: "GRPC",
            dependencies: ["HTTPServer", "GatewayFoundation", "Metrics", "ProtoCodec", "EventLoops"]),
        // A Redis client the gateway owns end to end: its socket (TCP or TLS through OpenSSL), bounded replies
        // parsed by hiredis, scripts by SHA. Knows nothing of what the commands mean.
        .target(
            name: "Redis", dependencies: ["CHiredis", "CLinux", "COpenSSL", "Cryptography", "GatewayFoundation"]),
        // A PostgreSQL client on the caller's event loop (GatewayFoundation's `IOLoop`), as libcurl is: libpq
        // non-blocking, in pipeline mode, with bounded results, typed errors, reconnects, LISTEN/NOTIFY and a small
        // pool per loop. Knows nothing of what the statements mean.
        .target(name: "Postgres", dependencies: ["CLibPQ", "GatewayFoundation", "Metrics"]),
        // The upstream App Store Server API client: libcurl multi handles driven by event loops (HTTP/2
        // over TLS, multiplexed), request JWTs, rate limits, retries, environment fallback.
        .target(
            name: "AppStoreClient",
            dependencies: [
                "CCurl", "Cryptography", "GatewayFoundation", "AppStoreDomain", "SignedData", "Metrics",
                .product(name: "Logging", package: "swift-log"), "Redis",
            ]),
        // The webhook's durable notification log: SQLite (WAL, synchronous commits) or a Redis stream; and the
        // subscription state kept beside it (SQLite tables in the same file, PostgreSQL tables, or in memory).
        .target(
            name: "NotificationStore",
            dependencies: [
                "CSQLite", "GatewayFoundation", "AppStoreClient", "Redis", "Postgres", "ProtoCodec",
                "SubscriptionState",
            ]),
        // The gateway's RPC implementations and the one GatewayError → gRPC status mapping.
        .target(
            name: "Services",
            dependencies: [
                "GRPC", "GatewayFoundation", "AppStoreDomain", "ProtoCodec", "SignedData", "SubscriptionState",
                "Cryptography", "Metrics",
                "AppStoreClient",
                "NotificationStore",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The gateway's edge beside its services: the caller guard and the watcher of its files, the webhook that
        // receives Apple's notifications, the admin endpoint (metrics, health, readiness).
        .target(
            name: "Edge",
            dependencies: [
                "Services", "GRPC", "HTTPServer", "GatewayFoundation", "AppStoreDomain", "AppStoreClient",
                "CallerAuthentication", "NotificationStore", "SignedData", "Observability", "Metrics",
                "ProtoCodec", "Cryptography",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The Prometheus text exposition of the metrics registry, the JSON-lines log handler and the gRPC access log.
        .target(
            name: "Observability",
            dependencies: [
                "GRPC", "GatewayFoundation", "Metrics", .product(name: "Logging", package: "swift-log"),
            ]),
        // OpenTelemetry traces: samplers, a batching OTLP/HTTP (protobuf) exporter on its own thread for the spans
        // every layer records through GatewayFoundation's `Tracer`.
        .target(
            name: "Tracing",
            dependencies: [
                "CCurl", "GatewayFoundation", "Metrics", "Observability",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // A fake of Apple's App Store Server API (same paths, JSON, errors, auth, limits) with a test PKI.
        .target(
            name: "Simulator", dependencies: ["HTTPServer", "GatewayFoundation", "AppStoreDomain", "Cryptography"],
            exclude: ["README.md"]),
        // The YAML configuration (Yams): every key parsed, defaulted and validated once into `GatewayConfiguration`,
        // which embeds each layer's own settings type (declared, with its one default, in its layer); the files
        // the configuration names, read at start-up. Just below the composition root: only GatewayApp, the CLI
        // and tests import it.
        .target(
            name: "Configuration",
            dependencies: [
                "GatewayFoundation", "AppStoreDomain", .product(name: "Yams", package: "Yams"), "Redis", "GRPC",
                "HTTPServer", "SignedData", "CallerAuthentication", "AppStoreClient", "NotificationStore", "Services",
                "Edge", "Tracing", "SubscriptionState", .product(name: "Logging", package: "swift-log"),
            ]),
        // The composition root: the gateway built, started and stopped from its configuration (gRPC server and
        // services, caller checks, webhook and notification store, admin endpoint), for the CLI and the tests.
        .target(
            name: "GatewayApp",
            dependencies: [
                "Edge", "Services", "GRPC", "HTTPServer", "EventLoops", "GatewayFoundation", "Observability", "Metrics",
                "AppStoreClient",
                "CallerAuthentication", "NotificationStore", "SignedData", "Tracing",
                .product(name: "Logging", package: "swift-log"), "AppStoreDomain", "Configuration", "Redis",
                "ProtoCodec", "Postgres",
            ]),
        // The `appstore-gateway` executable: arguments, configuration loading, logging, signals, the simulator.
        .executableTarget(
            name: "AppStoreGatewayCLI",
            dependencies: [
                "GatewayApp", "Services", "GRPC", "HTTPServer", "GatewayFoundation", "AppStoreDomain", "Configuration",
                "CLinux",
                "Simulator", "Observability", "AppStoreClient",
                "CallerAuthentication", "SignedData",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"), "Tracing", "Redis", "Edge",
            ],
            // jemalloc serves every malloc in the process (Swift's runtime, nghttp2, libcurl, OpenSSL): per-thread
            // caches and arenas, so loops do not share an allocator lock; docs/ARCHITECTURE.md "Memory".
            linkerSettings: [.linkedLibrary("jemalloc")]),

        // In-process VerifyJWS throughput for bench/verify.sh (not part of the gateway binary).
        .executableTarget(name: "VerifyBenchmark", dependencies: ["SignedData", "Cryptography"]),
        .executableTarget(
            name: "LogBenchmark",
            dependencies: [
                "Observability", "Metrics", "GRPC", "GatewayFoundation",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Fills the subscription state of a SQLite store directly, for bench/subscription_state.sh (1,000,000
        // subscriptions in minutes instead of a million webhook deliveries).
        .executableTarget(
            name: "StateSeed",
            dependencies: ["NotificationStore", "SubscriptionState", "SignedData", "ProtoCodec", "GatewayFoundation"]),

        // MARK: Tests mirror Sources.
        // Shared test fixtures (a TLS test server), used by several test targets.
        .target(
            name: "TestSupport", dependencies: ["HTTPServer", "Cryptography", "GatewayFoundation", "Redis"],
            path: "Tests/TestSupport"
        ),
        // The RPCs driven through the server's call path (router, guard, `ServerCall`) over in-memory streams, with
        // the simulator as Apple (fuzz/, ServicesTests and EdgeTests).
        .target(
            name: "ServiceHarness",
            dependencies: [
                "AppStoreDomain", "Services", "GRPC", "GatewayFoundation", "Configuration", "HTTPServer", "ProtoCodec",
                "Simulator", "NotificationStore", "GatewayApp", "Edge", "EventLoops", "CallerAuthentication",
                "AppStoreClient", "SignedData",
            ],
            path: "Tests/ServiceHarness"),
        // A scripted stand-in for Apple over TLS and the Apple clients wired to it (AppStoreClientTests, ServicesTests).
        .target(
            name: "AppleFixtures",
            dependencies: [
                "AppStoreClient", "AppStoreDomain", "Configuration", "Cryptography", "EventLoops", "GatewayFoundation",
                "HTTPServer",
                .product(name: "Logging", package: "swift-log"), "SignedData", "TestSupport",
            ],
            path: "Tests/AppleFixtures"),
        .testTarget(
            name: "ServicesTests",
            dependencies: [
                "ServiceHarness", "Services", "GRPC", "GatewayFoundation", "AppStoreDomain", "Configuration",
                "ProtoCodec", "TestSupport", "NotificationStore",
                "Simulator", "SignedData", "SubscriptionState",
                .product(name: "Logging", package: "swift-log"), "GatewayApp", "Edge",
                "AppleFixtures", "AppStoreClient", "Cryptography", "HTTPServer", "Observability", "Metrics",
                "EventLoops", "Postgres",
            ]),
        .testTarget(name: "GatewayFoundationTests", dependencies: ["GatewayFoundation"]),
        .testTarget(name: "MetricsTests", dependencies: ["Metrics"]),
        .testTarget(
            name: "AppStoreDomainTests",
            dependencies: [
                "AppStoreDomain", "GatewayFoundation", "Configuration", "TestSupport", "Redis", "AppStoreClient",
            ]),
        .testTarget(
            name: "ConfigurationTests",
            dependencies: [
                "Configuration", "AppStoreDomain", "GatewayFoundation", "TestSupport", "Redis", "GRPC", "HTTPServer",
                "SubscriptionState", "Services", "ProtoCodec", "AppStoreClient", "CallerAuthentication", "Edge",
                "NotificationStore", "SignedData", "Tracing",
            ]),
        .testTarget(
            name: "NotificationStoreTests",
            dependencies: [
                "NotificationStore", "Configuration", "AppStoreClient", "TestSupport", "Redis", "ProtoCodec",
                "SubscriptionState", "Postgres", "EventLoops", "GatewayFoundation",
            ]),
        // Fixtures/proto-json.txt: messages and Python json_format's JSON of them (scripts/proto-json-fixtures.py).
        .testTarget(name: "ProtoCodecTests", dependencies: ["ProtoCodec", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(
            name: "SubscriptionStateTests", dependencies: ["SubscriptionState", "ProtoCodec", "GatewayFoundation"]),
        // The reducer against the simulator: every scripted lifecycle's signed notifications, verified and decoded
        // as the gateway does, agree after every step with the simulator's Get All Subscription Statuses, and give
        // the same state in any order.
        .testTarget(
            name: "SubscriptionAgreementTests",
            dependencies: [
                "SubscriptionState", "Simulator", "SignedData", "ProtoCodec", "AppStoreDomain", "Cryptography",
                "GatewayFoundation",
            ]),
        .testTarget(name: "EventLoopsTests", dependencies: ["EventLoops", "GatewayFoundation"]),
        .testTarget(
            name: "RedisTests",
            dependencies: [
                "Redis", "Configuration", "TestSupport", "AppStoreClient", "GatewayFoundation", "AppStoreDomain",
            ]),
        .testTarget(
            name: "PostgresTests",
            dependencies: ["Postgres", "EventLoops", "GatewayFoundation", "Metrics", "TestSupport"]),
        .testTarget(
            name: "EdgeTests",
            dependencies: [
                "Edge", "ServiceHarness", "Services", "TestSupport", "GatewayFoundation", "Configuration",
                "Cryptography", "HTTPServer", "NotificationStore", "Observability", "Metrics", "SignedData",
                "Simulator",
                "AppStoreDomain", "GRPC", "ProtoCodec",
            ]),
        .testTarget(name: "CryptographyTests", dependencies: ["Cryptography"]),
        .testTarget(
            name: "CallerAuthenticationTests",
            dependencies: [
                "CallerAuthentication", "Cryptography", "GatewayFoundation", "AppStoreDomain", "Configuration",
            ]),
        .testTarget(
            name: "SignedDataTests",
            dependencies: ["SignedData", "Cryptography", "GatewayFoundation", "ProtoCodec", "TestSupport"],
            exclude: ["Fixtures", "Oracle"]),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: [
                "HTTPServer", "CNGHTTP2", "GatewayFoundation", "Configuration", "Cryptography", "TestSupport",
                "EventLoops",
            ]),
        .testTarget(
            name: "GRPCTests",
            dependencies: [
                "GRPC", "HTTPServer", "GatewayFoundation", "Metrics", "ProtoCodec", "TestSupport", "EventLoops",
            ],
            exclude: ["Clients"]),
        .testTarget(
            name: "TracingTests", dependencies: ["Tracing", "GatewayFoundation", "Observability", "Metrics"]),
        .testTarget(
            name: "ObservabilityTests",
            dependencies: [
                "Observability", "Metrics", "GRPC", "GatewayFoundation",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "SimulatorTests",
            dependencies: [
                "Simulator", "SignedData", "Cryptography", "HTTPServer", "GatewayFoundation", "AppStoreDomain",
                "Configuration", "TestSupport", "AppStoreClient",
            ],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "AppStoreClientTests",
            dependencies: [
                "AppStoreClient", "HTTPServer", "GatewayFoundation", "AppStoreDomain", "Configuration", "Cryptography",
                "EventLoops", "TestSupport", "Redis", "AppleFixtures", "Metrics",
            ]),
    ]
)

// In CI (`CI=true`) every warning of the project's own Swift code is an error: warnings stay at zero.
if ProcessInfo.processInfo.environment["CI"] == "true" {
    for target in package.targets
    where !(target.name.first == "C" && target.name.dropFirst().first?.isUppercase == true) {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-warnings-as-errors"])]
    }
}

// The event-loop modules check exclusive access at run time in debug builds (every test run), not in
// release: their objects are confined to one loop thread (checked by `LoopBound` and the loops'
// `assertInLoop`), and the per-access bookkeeping was 7% of a health check's CPU on the loop.
for target in package.targets where ["EventLoops", "HTTPServer", "GRPC"].contains(target.name) {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))
        ]
}

// The call path crosses modules (GatewayFoundation's ByteQueue and Lock, EventLoops' timers and slots, HTTPServer,
// GRPC): in release builds each module offers its small functions and generic types for inlining and
// specialization in the modules that call them, as one module would, so the split costs the hot path nothing.
for target in package.targets
where ["GatewayFoundation", "Metrics", "EventLoops", "HTTPServer", "GRPC", "ProtoCodec", "Observability"].contains(
    target.name)
{
    target.swiftSettings =
        (target.swiftSettings ?? []) + [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
}

// Upcoming-language checks the project keeps (they cost nothing at run time): an existential is written `any P`,
// and a file uses members only of the modules it imports itself (not those a dependency happens to import).
for target in package.targets
where !(target.name.first == "C" && target.name.dropFirst().first?.isUppercase == true) {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
        ]
}
