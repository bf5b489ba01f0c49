internal import CLibPQ
import Foundation
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// Host names resolved on a thread of their own: libpq resolves a `host` with `getaddrinfo` inside
/// `PQconnectStartParams`, which would block the loop, so the connection resolves them first and hands libpq the
/// addresses (`hostaddr`, one per host), keeping `host` for TLS verification.
enum HostResolution {
    /// The hosts of the configuration when one of them is a name to resolve; nil when there is none (addresses,
    /// Unix-domain socket directories, or `hostaddr` given).
    static func namesToResolve(_ configuration: PostgresConfiguration) -> [String]? {
        guard configuration["hostaddr"] == nil, let host = configuration["host"], !host.isEmpty else { return nil }
        let hosts = host.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        if hosts.allSatisfy({ isSocket($0) || isAddress($0) }) { return nil }
        return hosts
    }

    /// Resolves `hosts` on a new thread and calls `done` there with the `hostaddr` list.
    static func resolve(_ hosts: [String], _ done: @escaping @Sendable (Result<String, PostgresError>) -> Void) {
        Thread.start(named: "pg-resolve") { done(resolveNow(hosts)) }
    }

    static func resolveNow(_ hosts: [String]) -> Result<String, PostgresError> {
        var addresses: [String] = []
        for host in hosts {
            if host.isEmpty || isSocket(host) || isAddress(host) {
                addresses.append(isAddress(host) ? host : "")
                continue
            }
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, nil, &hints, &list)
            defer { if let list { freeaddrinfo(list) } }
            guard status == 0, let first = list, let address = numericHost(first.pointee) else {
                return .failure(PostgresError(.refused, "cannot resolve the host name \(host)"))
            }
            addresses.append(address)
        }
        return .success(addresses.joined(separator: ","))
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
