internal import CLibPQ
import Foundation
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// Host names resolved on a thread of their own: libpq resolves a `host` with `getaddrinfo` inside
/// `PQconnectStartParams`, which would block the loop, so the connection resolves them first and hands libpq the
/// addresses (`hostaddr`), keeping each name in `host` for TLS verification. A name with several addresses (IPv6
/// and IPv4 for `localhost`) becomes as many entries, tried in turn by libpq as it would have.
enum HostResolution {
    /// The `host`, `hostaddr` and `port` lists a connection attempt passes instead of the configuration's.
    struct Resolved: Sendable, Hashable {
        var host: String
        var hostaddr: String
        /// Nil: the configuration's `port` applies to every entry as it is.
        var port: String?
    }

    /// The hosts of the configuration when one of them is a name to resolve; nil when there is none (addresses,
    /// Unix-domain socket directories, or `hostaddr` given), or when the port list cannot match the hosts (libpq
    /// then refuses the options before it resolves anything).
    static func namesToResolve(_ configuration: PostgresConfiguration) -> (hosts: [String], ports: [String])? {
        guard configuration["hostaddr"] == nil, let host = configuration["host"], !host.isEmpty else { return nil }
        let hosts = host.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        if hosts.allSatisfy({ isSocket($0) || isAddress($0) }) { return nil }
        let ports = (configuration["port"] ?? "").split(separator: ",", omittingEmptySubsequences: false).map(
            String.init)
        guard ports.count <= 1 || ports.count == hosts.count else { return nil }
        return (hosts, ports.count == hosts.count && hosts.count > 1 ? ports : [])
    }

    /// Resolves `hosts` on a new thread and calls `done` there.
    static func resolve(
        _ hosts: [String], ports: [String], _ done: @escaping @Sendable (Result<Resolved, PostgresError>) -> Void
    ) {
        Thread.start(named: "pg-resolve") { done(resolveNow(hosts, ports: ports)) }
    }

    /// At most this many addresses of one name are tried.
    static let addressesPerName = 4

    static func resolveNow(_ hosts: [String], ports: [String]) -> Result<Resolved, PostgresError> {
        var entries: [(host: String, address: String, port: String?)] = []
        for (index, host) in hosts.enumerated() {
            let port = ports.isEmpty ? nil : ports[index]
            if host.isEmpty || isSocket(host) || isAddress(host) {
                entries.append((host, isAddress(host) ? host : "", port))
                continue
            }
            let addresses = addressesOf(host)
            guard !addresses.isEmpty else {
                return .failure(PostgresError(.refused, "cannot resolve the host name \(host)"))
            }
            for address in addresses { entries.append((host, address, port)) }
        }
        return .success(
            Resolved(
                host: entries.map(\.host).joined(separator: ","),
                hostaddr: entries.map(\.address).joined(separator: ","),
                port: ports.isEmpty ? nil : entries.map { $0.port ?? "" }.joined(separator: ",")))
    }

    /// The numeric addresses of `host` (TCP), in the resolver's order, without repeats.
    private static func addressesOf(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { if let list { freeaddrinfo(list) } }
        var addresses: [String] = []
        var next = list
        while let entry = next, addresses.count < addressesPerName {
            if let address = numericHost(entry.pointee), !addresses.contains(address) { addresses.append(address) }
            next = entry.pointee.ai_next
        }
        return addresses
    }

    private static func numericHost(_ info: addrinfo) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard
            getnameinfo(info.ai_addr, info.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0
        else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func isSocket(_ host: String) -> Bool { host.hasPrefix("/") || host.hasPrefix("@") }

    private static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// A cancel request for the statement a server session runs, sent from a thread of its own: `PQcancel` opens a
/// connection of its own and waits for it.
final class CancelRequest: @unchecked Sendable {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { PQfreeCancel(handle) }

    /// Sends `request` and then calls `done` (on that thread).
    static func send(_ request: CancelRequest, then done: @escaping @Sendable () -> Void) {
        Thread.start(named: "pg-cancel") {
            var error = [CChar](repeating: 0, count: 256)
            _ = PQcancel(request.handle, &error, Int32(error.count))
            done()
        }
    }
}
