import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A redis-server child process on a loopback port, without persistence: plain, or TLS only (`tls`, no
/// plain port), with any further configuration lines in `arguments` (e.g. ACL users).
package final class RedisProcess {
    package static let executable: String? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    package let port: Int
    private let process = Process()

    /// Starts redis-server on `port` (a free one when nil); with `tls`, TLS only on that port, clients
    /// verified against the fixture's CA when `clientCertificates`.
    package init(
        port: Int? = nil, tls: RedisTLSFixture? = nil, clientCertificates: Bool = false, arguments: [String] = []
    ) throws {
        self.port = try port ?? Self.freePort()
        process.executableURL = URL(fileURLWithPath: Self.executable ?? "/usr/bin/redis-server")
        var listen = ["--port", String(self.port)]
        if let tls {
            listen = [
                "--port", "0", "--tls-port", String(self.port), "--tls-cert-file", tls.serverCertificateFile,
                "--tls-key-file", tls.serverKeyFile, "--tls-ca-cert-file", tls.caFile,
                "--tls-auth-clients", clientCertificates ? "yes" : "no",
            ]
        }
        process.arguments =
            listen + ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when it accepts a connection.
        for _ in 0..<100 {
            if Self.accepts(port: self.port) { return }
            usleep(50_000)
        }
        stop()
        throw CocoaError(.fileReadUnknown)
    }

    package func stop() {
        // SIGKILL by pid, then wait until the port is free: Foundation's terminate/waitUntilExit proved
        // unreliable on a concurrency thread here (a spinning run loop, a child left running).
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        for _ in 0..<200 where Self.accepts(port: port) { usleep(10_000) }
    }

    /// The integer after `field` in an INFO reply's `text` ("cmdstat_eval:calls=3,…" → 3 for
    /// "cmdstat_eval:calls="; "total_net_output_bytes:123" → 123 for "total_net_output_bytes:"); 0 when absent.
    package static func infoNumber(_ field: String, in text: String) -> Int {
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix(field) {
            return Int(line.dropFirst(field.count).prefix { $0.isNumber }) ?? 0
        }
        return 0
    }

    package static func freePort() throws -> Int {
        let (fd, port) = try loopbackSocket()
        close(fd)
        return port
    }

    package static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
