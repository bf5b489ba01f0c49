import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A throw-away PostgreSQL server on a free loopback port: `initdb` into a directory of its own (trust
/// authentication, or a password for `password`), started with `pg_ctl` (`fsync=off`, the Unix socket in that
/// directory too), stopped (`immediate` for a crash) and started again on the same port and data; `deinit` stops
/// it and removes the directory. The server refuses to run as root, so as root its programs run as the
/// `postgres` user (or `nobody`) and the directory is made under /tmp, where that user can reach it.
package final class PostgresProcess: @unchecked Sendable {
    /// The directory of `initdb`, `pg_ctl` and `postgres`: Debian's newest version, else the one on PATH.
    package static let binaries: String? = {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let directory = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: directory + "/initdb") { return directory }
        }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            if FileManager.default.isExecutableFile(atPath: "\(directory)/initdb") { return String(directory) }
        }
        return nil
    }()

    /// Whether a server can be started here.
    package static var available: Bool { binaries != nil }

    /// One server for every test of the process that neither stops it nor needs a password, made at first use
    /// and stopped when the process exits.
    ///
    /// Every call that starts a program (`initdb`, `pg_ctl`, `createdb`) waits for it on one serial queue of its
    /// own (`programs`): off Swift's cooperative pool, whose one thread per core a test blocked for the seconds
    /// `initdb` takes would take from every other test, and one program at a time, so tests starting servers
    /// together do not run a storm of `initdb`s that starves the timing of everything else on 2 cores.
    package static func shared() async throws -> PostgresProcess {
        try await serially { try sharedBlocking() }
    }

    /// The queue every program runs from, one at a time.
    private static let programs = DispatchQueue(label: "postgres-process.programs")

    /// `body` on `programs`, awaited.
    private static func serially<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
            programs.async { continuation.resume(returning: Result { try body() }) }
        }.get()
    }

    private static func sharedBlocking() throws -> PostgresProcess {
        try sharedServer.withLock { server in
            if let server { return server }
            let made = try PostgresProcess(password: nil, tlsCertificate: nil, tlsKey: nil)
            server = made
            atexit { PostgresProcess.stopShared() }
            return made
        }
    }

    private static let sharedServer = SharedServer()

    private static func stopShared() {
        sharedServer.withLock { server in
            // At exit, without starting processes: the postmaster's immediate shutdown is its SIGQUIT.
            if let made = server, let pid = made.postmasterPID {
                kill(pid, SIGQUIT)
                for _ in 0..<200 where kill(pid, 0) == 0 { usleep(10_000) }
            }
            if let made = server { try? FileManager.default.removeItem(atPath: made.directory) }
            server = nil
        }
    }

    package let port: Int
    /// The superuser's name.
    package let user = "postgres"
    /// The superuser's password (with `password`), else nil (trust).
    package let password: String?
    package let directory: String
    private var dataDirectory: String { directory + "/data" }
    private let runAs: (uid: uid_t, gid: gid_t)?

    /// A URI for the server's `postgres` database (with the password, when there is one).
    package var uri: String {
        let credentials = password.map { "\(user):\($0)" } ?? user
        return "postgresql://\(credentials)@127.0.0.1:\(port)/postgres"
    }

    /// Whether the server offers TLS (with the certificate and key given to `init`).
    package let tls: Bool

    /// Makes the cluster and starts the server; with `password`, every TCP connection must authenticate with it
    /// (SCRAM); with `tlsCertificate` and `tlsKey` (PEM files), the server offers TLS with them.
    package static func launch(
        password: String? = nil, tlsCertificate: String? = nil, tlsKey: String? = nil
    ) async throws -> PostgresProcess {
        try await serially { try PostgresProcess(password: password, tlsCertificate: tlsCertificate, tlsKey: tlsKey) }
    }

    private init(password: String?, tlsCertificate: String?, tlsKey: String?) throws {
        guard let binaries = Self.binaries else { throw PostgresProcessError("initdb is not installed") }
        self.password = password
        tls = tlsCertificate != nil && tlsKey != nil
        runAs = geteuid() == 0 ? Self.unprivilegedUser() : nil
        let base = runAs == nil ? (NSTemporaryDirectory() as NSString).appendingPathComponent("") + "/" : "/tmp/"
        var template = Array((base + "pg-test.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw PostgresProcessError("mkdtemp failed") }
        directory = String(cString: made)
        port = try Self.freePort()
        do {
            if let runAs { chown(directory, runAs.uid, runAs.gid) }
            var arguments = ["-D", dataDirectory, "-U", user, "--no-sync", "-E", "UTF8", "--locale=C"]
            if let password {
                let file = directory + "/password"
                try password.write(toFile: file, atomically: true, encoding: .utf8)
                if let runAs { chown(file, runAs.uid, runAs.gid) }
                arguments += ["--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + file]
            } else {
                arguments += ["--auth=trust"]
            }
            try run(binaries + "/initdb", arguments)
            if let tlsCertificate, let tlsKey {
                // The server wants its key readable by itself only.
                for (source, name) in [(tlsCertificate, "server.crt"), (tlsKey, "server.key")] {
                    let path = directory + "/" + name
                    try FileManager.default.copyItem(atPath: source, toPath: path)
                    chmod(path, 0o600)
                    if let runAs { chown(path, runAs.uid, runAs.gid) }
                }
            }
            try startBlocking()
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    deinit {
        try? stopBlocking(immediately: true)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the server (again) and waits until it accepts connections.
    package func start() async throws {
        try await Self.serially { [self] in try startBlocking() }
    }

    private func startBlocking() throws {
        guard let binaries = Self.binaries else { return }
        let options =
            "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off "
            + "-c full_page_writes=off -c max_connections=200 -c shared_buffers=16MB"
            + (tls
                ? " -c ssl=on -c ssl_cert_file=\(directory)/server.crt -c ssl_key_file=\(directory)/server.key" : "")
        try run(
            binaries + "/pg_ctl",
            ["-D", dataDirectory, "-l", directory + "/log", "-w", "-t", "60", "-o", options, "start"])
    }

    /// Stops the server: `immediately` as a crash does (no checkpoint, connections cut), else a fast shutdown.
    package func stop(immediately: Bool = false) async throws {
        try await Self.serially { [self] in try stopBlocking(immediately: immediately) }
    }

    private func stopBlocking(immediately: Bool) throws {
        guard let binaries = Self.binaries else { return }
        guard FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid") else { return }
        try run(binaries + "/pg_ctl", ["-D", dataDirectory, "-m", immediately ? "immediate" : "fast", "-w", "stop"])
    }

    /// A new, empty database on the server (`createdb`, a name of its own), and its URI: each test that keeps a
    /// schema gets a database of its own, so tests sharing the server neither see nor lock each other's rows.
    package func makeDatabase() async throws -> String {
        try await Self.serially { [self] in try makeDatabaseBlocking() }
    }

    private func makeDatabaseBlocking() throws -> String {
        guard let binaries = Self.binaries else { throw PostgresProcessError("initdb is not installed") }
        let name = "test_" + String(UInt64.random(in: 1...UInt64.max), radix: 36)
        try run(binaries + "/createdb", ["-h", directory, "-p", "\(port)", "-U", user, name])
        let credentials = password.map { "\(user):\($0)" } ?? user
        return "postgresql://\(credentials)@127.0.0.1:\(port)/\(name)"
    }

    /// The postmaster's process id while it runs (the first line of `postmaster.pid`).
    package var postmasterPID: pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8) else {
            return nil
        }
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// The server's log so far (for a failing test's message).
    package var log: String { (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "" }

    /// Runs `program` and waits for it, its output in a file: posix_spawn and waitpid, since Foundation's
    /// `Process.waitUntilExit` can wait for ever on a concurrency thread (it needs a run loop to see the exit).
    private func run(_ program: String, _ arguments: [String]) throws {
        // In the server's directory (env -C), which its user can read where the caller's may not be.
        var command = ["/usr/bin/env", "-C", directory, program] + arguments
        if let runAs {
            command = ["/usr/bin/setpriv", "--reuid=\(runAs.uid)", "--regid=\(runAs.gid)", "--clear-groups"] + command
        }
        let outputPath = directory + "/command-output"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let arguments = command.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, arguments, environ)
        guard spawned == 0 else { throw PostgresProcessError("cannot start \(program): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // Exited with 0 (the wait status's low 7 bits are the signal, the next 8 the exit code).
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            let output = Self.contents(of: outputPath)
            throw PostgresProcessError("\(command.joined(separator: " ")) failed (\(status)): \(output)")
        }
    }

    /// The first 64 KiB of a file as text, read with the system's calls: Foundation's file reading, run on the
    /// programs' dispatch queue, left a buffer behind that LeakSanitizer reports.
    private static func contents(of path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 65_536)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
    }

    /// The user the server runs as under root: `postgres` (Debian's package makes it), else `nobody`.
    private static func unprivilegedUser() -> (uid: uid_t, gid: gid_t)? {
        for name in ["postgres", "nobody"] {
            if let entry = getpwnam(name) { return (entry.pointee.pw_uid, entry.pointee.pw_gid) }
        }
        return nil
    }

    private static func freePort() throws -> Int {
        guard let (fd, port) = try? loopbackSocket() else { throw PostgresProcessError("no free port") }
        close(fd)
        return port
    }
}

/// Why a throw-away server could not be made or driven.
package struct PostgresProcessError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// The shared server, behind a lock.
private final class SharedServer: @unchecked Sendable {
    private let lock = NSLock()
    private var server: PostgresProcess?

    func withLock<T>(_ body: (inout PostgresProcess?) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&server)
    }
}
