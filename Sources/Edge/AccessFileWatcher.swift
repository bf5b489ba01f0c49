import AppStoreClient
import AppStoreDomain
import CallerAuthentication
import Foundation
import GatewayFoundation
import HTTPServer
import Logging
import Metrics
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Re-reads the JWKS file, the TLS files and any other `Watched` files (the resume-token key ring) when they
/// change, on a thread of its own (never on an event loop): every `interval` it `stat`s each file through any
/// symlinks, so an in-place write, a rename over the file and a Kubernetes projected-volume swap of the
/// `..data` symlink are all seen. A file that fails to load keeps the previous version in force, is logged at
/// error level (`kept the previous …`) and counted in `appstore_gateway_reload_failures_total{file}`; it is
/// tried again at its next change.
package final class AccessFileWatcher: Sendable {
    /// Files read together, and what re-reads them.
    package struct Watched: Sendable {
        var paths: [String]
        /// The `file` label of the reload failures: a fixed name ("tls", "jwks", "resume_token_keys").
        var file: String
        /// What the files hold, for the log line of a failed reload ("kept the previous \(what)").
        var what: String
        var reload: @Sendable () throws -> Void

        /// Runs `reload` after any of `paths` changes; an error it throws keeps what is in force.
        package init(paths: [String], file: String, what: String, reload: @escaping @Sendable () throws -> Void) {
            self.paths = paths
            self.file = file
            self.what = what
            self.reload = reload
        }
    }

    private let watched: [Watched]
    private let interval: Duration
    private let logger: Logger
    private let failures: CounterFamily?
    private let running = Atomic<Bool>(false)
    private let stopped = Lock<Bool>(false)

    /// Watches `jwt.jwksFile` for `authenticator`, the `tls` files for `context` (its key judged like a `.p8`,
    /// `KeyFileAccess`), and `others`; failed reloads are counted in `registry`.
    package init(
        jwt: BearerTokenVerifier.Settings?, authenticator: CallerAuthenticator?,
        tls: AccessFileWatcher.TLS?, context: TLSContext?, allowReadableKeyFiles: Bool = false, logger: Logger,
        registry: MetricsRegistry? = nil,
        interval: Duration = .seconds(1), others: [Watched] = []
    ) {
        var watched = others
        if let jwt, let authenticator {
            watched.append(
                Watched(paths: [jwt.jwksFile], file: "jwks", what: "JWKS") {
                    let keys = try Self.loadKeys(jwt.jwksFile)
                    authenticator.replaceKeys(keys)
                    logger.info(
                        "reloaded the JWKS",
                        metadata: [
                            "file": "\(jwt.jwksFile)", "keys": "\(keys.keys.map(\.id).joined(separator: ","))",
                        ])
                })
        }
        if let tls, let context {
            let paths = [tls.certificateFile, tls.privateKeyFile, tls.clientCAFile].filter { !$0.isEmpty }
            watched.append(
                Watched(paths: paths, file: "tls", what: "TLS certificate") {
                    try KeyFileAccess.check(
                        tls.privateKeyFile, key: "tls.privateKeyFile", allowReadableFile: allowReadableKeyFiles)
                    try context.reload(
                        certificateChainFile: tls.certificateFile, privateKeyFile: tls.privateKeyFile,
                        clientCAFile: tls.clientCAFile)
                    logger.info("reloaded the TLS certificate", metadata: ["file": "\(tls.certificateFile)"])
                })
        }
        self.watched = watched
        self.interval = interval
        self.logger = logger
        failures = registry?.counter(
            "appstore_gateway_reload_failures_total",
            help: "Re-reads of a changed watched file that failed, keeping the previous version in force.",
            labelNames: ["file"])
        for entry in watched { _ = failures?.labels(entry.file) }
    }

    /// Reads and parses a JWKS file (at most `JSONWebKeySet.maxDocumentBytes`); at least one key must be usable.
    package static func loadKeys(_ path: String) throws -> JSONWebKeySet {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationError(key: "authentication.jwt.jwksFile", problem: "cannot read '\(path)'")
        }
        defer { try? handle.close() }
        let data = handle.readData(ofLength: JSONWebKeySet.maxDocumentBytes + 1)
        let keys = try JSONWebKeySet(json: [UInt8](data))
        guard !keys.keys.isEmpty else {
            throw ConfigurationError(
                key: "authentication.jwt.jwksFile",
                problem: "'\(path)' holds no usable RS256 or ES256 key (\(keys.skipped.joined(separator: "; ")))")
        }
        return keys
    }

    /// Starts watching (once).
    package func start() {
        guard !watched.isEmpty, !running.exchange(true, ordering: .relaxed) else { return }
        let stamps = watched.map { $0.paths.map(Self.stamp) }
        Thread.start(named: "access-watch") { [self] in
            var last = stamps
            while !stopped.withLock({ $0 }) {
                Thread.sleep(
                    forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds)
                        / 1e18)
                for (index, entry) in watched.enumerated() {
                    let now = entry.paths.map(Self.stamp)
                    if now != last[index] {
                        last[index] = now
                        reload(entry)
                    }
                }
            }
        }
    }

    /// Re-reads `entry`'s files; a failure keeps the previous version, logged at error level and counted.
    private func reload(_ entry: Watched) {
        do {
            try entry.reload()
        } catch {
            failures?.labels(entry.file).increment()
            let problem = (error as? ConfigurationError)?.problem ?? "\(error)"
            logger.error(
                "kept the previous \(entry.what)",
                metadata: [
                    "file": "\(entry.paths.joined(separator: ","))", "watched": "\(entry.file)",
                    "problem": "\(problem)",
                ])
        }
    }

    /// Stops watching (the thread ends within one interval).
    package func stop() { stopped.withLock { $0 = true } }

    /// What identifies a file's content without reading it: device, inode, size and modification time of
    /// the file a path resolves to (nil when it cannot be stat'ed).
    static func stamp(_ path: String) -> [Int64]? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return [
            Int64(truncatingIfNeeded: info.st_dev), Int64(truncatingIfNeeded: info.st_ino), Int64(info.st_size),
            Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec),
        ]
    }
}
