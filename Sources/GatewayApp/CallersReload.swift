import AppStoreDomain
import CallerAuthentication
import Configuration
import Edge
import Foundation
import GRPC
import GatewayFoundation
import Logging

/// `callers` re-read from the configuration file when it changes (README "Permissions"): the new list is put in
/// force for every call from then on, and every open call it no longer allows (a stream of a caller whose app or
/// permission was taken away, or who is no longer listed) ends with PERMISSION_DENIED. Only `callers` is
/// reloaded; a file with any problem, or one that would switch between open mode and a `callers` list, keeps the
/// previous list (the watcher logs it at error level and counts it). Every other key takes effect at the next start.
final class CallersReload: Sendable {
    private let path: String
    private let apps: [App]
    private let authenticator: CallerAuthenticator
    private let logger: Logger
    /// The gRPC server whose open calls are checked again (set once it started).
    private let server = Lock<GRPCServer?>(nil)

    init(path: String, apps: [App], authenticator: CallerAuthenticator, logger: Logger) {
        self.path = path
        self.apps = apps
        self.authenticator = authenticator
        self.logger = logger
    }

    /// The watcher's entry for the configuration file (a failed reload is logged and counted as
    /// `file="configuration"`).
    var watched: AccessFileWatcher.Watched {
        AccessFileWatcher.Watched(paths: [path], file: "configuration", what: "callers") { [self] in try reload() }
    }

    /// Checks the open calls of `server` after each reload from now on.
    func checking(_ server: GRPCServer?) { self.server.withLock { $0 = server } }

    /// Why a changed file's `callers` were not put in force.
    struct Refused: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads the file again and applies its `callers`; throws (the previous list stays) when the file does not
    /// load or would switch between open mode and a `callers` list.
    func reload(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Refused(description: "cannot read '\(path)'")
        }
        let (configuration, problems) = try GatewayConfiguration.check(yaml: text, environment: environment)
        if let problem = problems.first { throw problem }
        // Resolved against the apps this process serves (a new app needs a restart, so it authorizes nobody).
        guard authenticator.replacePolicy(CallerPolicy(callers: configuration.callers, apps: apps)) else {
            throw Refused(description: "switching between open mode and a callers list needs a restart")
        }
        let logger = self.logger
        logger.info(
            "reloaded callers (other keys take effect at the next start)",
            metadata: ["file": "\(path)", "callers": "\(configuration.callers?.count ?? 0)"])
        server.withLock { $0 }?.recheckOpenCalls { ended in
            if ended > 0 {
                logger.warning("ended calls the reloaded callers no longer allow", metadata: ["calls": "\(ended)"])
            }
        }
    }
}
