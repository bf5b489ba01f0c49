import Foundation
import GRPC
import HTTPServer
import Testing

@testable import Configuration

/// Every transport key is one knob of a layer's own configuration, with one default: the layer's, which is the
/// README's.
@Suite struct TransportDefaultsTests {
    private static let readme: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return (try? String(contentsOfFile: path + "/README.md", encoding: .utf8)) ?? ""
    }()

    /// The transport keys of the README's configuration table and their documented defaults, with a row such as
    /// "`connection.maxAge` / `maxAgeGrace` | 30m / 5m" split into its keys.
    static func documentedDefaults() -> [(key: String, value: String)] {
        var found: [(key: String, value: String)] = []
        for line in readme.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            let quoted = cells[0].split(separator: "/").map { $0.trimmingCharacters(in: .whitespaces) }
            // Only rows of the key table: each key cell holds nothing but `key` / `key`.
            guard quoted.allSatisfy({ $0.count > 2 && $0.hasPrefix("`") && $0.hasSuffix("`") && !$0.contains(" ") })
            else { continue }
            let keys = quoted.map(\.trimmingBackticks)
            let values = cells[1].split(separator: " / ").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = keys.first, keys.count == values.count,
                ["listen", "threads"].contains(first)
                    || ["limits.", "connection.", "shutdown."].contains(where: first.hasPrefix)
            else { continue }
            let section = first.contains(".") ? String(first[..<first.lastIndex(of: ".")!]) + "." : ""
            for (index, key) in keys.enumerated() {
                found.append((index == 0 ? key : section + key, values[index].trimmingBackticks))
            }
        }
        return found
    }

    /// A README default as a configuration value: "4 MiB" → "4194304"; the rest as written.
    static func configurationValue(_ documented: String) -> String {
        let parts = documented.split(separator: " ")
        guard parts.count == 2, let number = Int(parts[0]) else { return documented }
        switch parts[1] {
        case "KiB": return String(number * 1024)
        case "MiB": return String(number * 1024 * 1024)
        default: return documented
        }
    }

    @Test func theDefaultsAreTheLayersOwn() throws {
        let loaded = try GatewayConfiguration.load(yaml: "")
        #expect(loaded.grpc == GRPCServerConfiguration())
        #expect(GatewayConfiguration().grpc == GRPCServerConfiguration())
        #expect(loaded.grpc.http2 == HTTP2Configuration())
    }

    @Test func everyDocumentedTransportKeyIsRead() {
        let keys = Set(Self.documentedDefaults().map(\.key))
        let expected: Set<String> = [
            "listen", "threads", "limits.maxReceiveMessageBytes", "limits.maxConcurrentStreams",
            "limits.maxHeaderListBytes", "limits.initialWindowBytes", "limits.streamWriteBufferBytes",
            "limits.maxBufferedBytesPerConnection", "limits.maxBufferedBytes", "limits.maxConnections",
            "limits.maxPendingHandshakes", "limits.maxPendingHandshakesPerAddress", "limits.defaultDeadline",
            "limits.maxDeadline", "connection.handshakeTimeout", "connection.unauthenticatedIdleTimeout",
            "connection.headerBlockTimeout", "connection.maxIdle", "connection.keepaliveTime",
            "connection.keepaliveTimeout", "connection.maxAge", "connection.maxAgeGrace",
            "connection.minClientPingInterval", "connection.permitClientPingWithoutCalls", "connection.maxPingStrikes",
            "shutdown.drainDelay", "shutdown.grace",
        ]
        #expect(keys == expected)
    }

    /// Setting each key to the README's default changes nothing: the layer's default is the documented one.
    @Test func theREADMEDefaultsAreTheLayersDefaults() throws {
        let defaults = try GatewayConfiguration.load(yaml: "")
        for (key, documented) in Self.documentedDefaults() {
            let value = Self.configurationValue(documented)
            let set = try GatewayConfiguration.load(
                yaml: "", environment: [ConfigurationReader.environmentName(key): value])
            #expect(set.grpc == defaults.grpc, "\(key): README says \(documented)")
            #expect(set.shutdown == defaults.shutdown, "\(key): README says \(documented)")
        }
    }

    @Test func theDocumentedValuesAsDurations() throws {
        let grpc = try GatewayConfiguration.load(yaml: "").grpc
        #expect(grpc.http2.maxConnectionAge == .seconds(1_800))
        #expect(grpc.http2.maxConnectionAgeGrace == .seconds(300))
        #expect(grpc.http2.keepaliveTime == .seconds(120))
        #expect(grpc.shutdownGrace == .seconds(10))
        #expect(GatewayConfiguration().shutdown.drainDelay == .seconds(5))
    }

    @Test func zeroTurnsATimerOff() throws {
        let config = try GatewayConfiguration.load(
            yaml: """
                connection: { maxIdle: 0, keepaliveTime: 0s, maxAge: 0ms, maxAgeGrace: 0, unauthenticatedIdleTimeout: 0 }
                shutdown: { grace: 0 }
                """)
        #expect(config.grpc.http2.unauthenticatedIdleTimeout == nil)
        #expect(config.grpc.http2.idleTimeout == nil)
        #expect(config.grpc.http2.keepaliveTime == nil)
        #expect(config.grpc.http2.maxConnectionAge == nil)
        // Not timers that can be off: zero is zero.
        #expect(config.grpc.http2.maxConnectionAgeGrace == .zero)
        #expect(config.grpc.shutdownGrace == .zero)
    }

    @Test func timesAreReadAsDurations() throws {
        let config = try GatewayConfiguration.load(
            yaml: """
                connection: { maxAge: 90s, maxAgeGrace: 250ms, keepaliveTime: 1m, handshakeTimeout: 3s }
                shutdown: { drainDelay: 2s }
                """,
            environment: ["APPSTORE_GATEWAY_CONNECTION_MIN_CLIENT_PING_INTERVAL": "10s"])
        #expect(config.grpc.http2.maxConnectionAge == .seconds(90))
        #expect(config.grpc.http2.maxConnectionAgeGrace == .milliseconds(250))
        #expect(config.grpc.http2.keepaliveTime == .seconds(60))
        #expect(config.grpc.http2.handshakeTimeout == .seconds(3))
        #expect(config.grpc.http2.minClientPingInterval == .seconds(10))
        #expect(config.shutdown.drainDelay == .seconds(2))
    }
}

extension StringProtocol {
    fileprivate var trimmingBackticks: String { String(filter { $0 != "`" }) }
}
