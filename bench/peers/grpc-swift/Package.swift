// swift-tools-version:6.1
// The grpc-swift-2 peer of bench/transport-peers.sh: a unary health-Check-like server on
// grpc-swift-nio-transport (HTTP/2, h2c). A package of its own so `make test` never builds it.
import PackageDescription

let package = Package(
    name: "grpc-swift-peer",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/grpc/grpc-swift-2.git", exact: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", exact: "2.9.2"),
    ],
    targets: [
        .executableTarget(
            name: "grpc-swift-peer",
            dependencies: [
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ],
            path: "Sources/GRPCSwiftPeer")
    ]
)
