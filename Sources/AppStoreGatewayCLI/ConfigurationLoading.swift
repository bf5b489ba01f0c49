import AppStoreClient
import AppStoreDomain
import ArgumentParser
import CallerAuthentication
import Configuration
import Edge
import Foundation
import HTTPServer
import Logging
import Observability
import Redis
import Services

/// Reading a configuration file for `serve`, `state` and `check-config`, and reporting what is wrong with it.
enum ConfigurationLoading {
    /// The configuration a command runs with (`serve`, `state`): the file at `path` (none: the built-in
    /// defaults) checked against `environment`, its files left for `GatewayApp` to read. A file that cannot be
    /// read or a bad key fails the command (`fail`).
    static func load(path: String?, environment: [String: String]) throws -> GatewayConfiguration {
        var yaml = ""
        if let path {
            switch Self.text(of: path) {
            case .success(let text): yaml = text
            case .failure(let error): throw Self.fail("invalid configuration", problems: [error])
            }
        }
        let (configuration, problems) = Self.problems(
            yaml: yaml, path: path, environment: environment, loadingFiles: false)
        guard problems.isEmpty else { throw Self.fail("invalid configuration", problems: problems) }
        return configuration
    }

    /// The file's text, or a problem naming it.
    static func text(of path: String) -> Result<String, ConfigurationError> {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return .failure(ConfigurationError(key: "", problem: "cannot read the configuration file '\(path)'"))
        }
        return .success(text)
    }

    /// Every problem of a configuration: its keys (one problem per bad key) and, when those are fine and
    /// `loadingFiles` (`check-config`), its apps' private keys, TLS and JWKS files, resume-token key ring and
    /// admin bearer token. `serve` passes false: `GatewayApp` reads each of those files once, where it builds
    /// what they hold, and stops there on the first bad one. Paths are resolved against the file's folder.
    static func problems(
        yaml: String, path: String?, environment: [String: String], loadingFiles: Bool = true
    ) -> (GatewayConfiguration, [ConfigurationError]) {
        var configuration: GatewayConfiguration
        var problems: [ConfigurationError]
        do {
            (configuration, problems) = try GatewayConfiguration.check(yaml: yaml, environment: environment)
        } catch {
            return (GatewayConfiguration(), [error])
        }
        if let path {
            configuration.resolvePaths(relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        }
        guard problems.isEmpty, loadingFiles else { return (configuration, problems) }
        // An Xcode app never calls Apple, so it has no key to check.
        for (index, app) in configuration.apps.enumerated() where app.environment != .xcode {
            do {
                _ = try AppKeySigner.load(
                    app: app, index: index, allowReadableFile: configuration.apple.allowReadableKeyFiles)
            } catch {
                problems.append(error)
            }
        }
        problems += accessFileProblems(configuration)
        do {
            _ = try ResumeTokenKeyRing.keys(configuration)
        } catch {
            problems.append(error)
        }
        do {
            _ = try AdminBearerToken.token(configuration)
        } catch {
            problems.append(error)
        }
        do {
            _ = try TeamWebhook.secrets(configuration)
        } catch {
            problems.append(error)
        }
        return (configuration, problems)
    }

    /// The TLS files and the JWKS file load (the same code `serve` runs).
    static func accessFileProblems(_ configuration: GatewayConfiguration) -> [ConfigurationError] {
        var problems: [ConfigurationError] = []
        if let tls = configuration.tls {
            do {
                try KeyFileAccess.check(
                    tls.privateKeyFile, key: "tls.privateKeyFile",
                    allowReadableFile: configuration.apple.allowReadableKeyFiles)
                _ = try TLSContext(
                    certificateChainFile: tls.certificateFile, privateKeyFile: tls.privateKeyFile,
                    clientCAFile: tls.clientCAFile, sessionMaxAge: tls.sessionMaxAge)
            } catch let error as ConfigurationError {
                problems.append(error)
            } catch {
                problems.append(ConfigurationError(key: "tls", problem: "\(error)"))
            }
        }
        if let problem = RedisTLSContext.problem(
            configuration.redis, allowReadableKeyFiles: configuration.apple.allowReadableKeyFiles)
        {
            problems.append(problem)
        }
        if let jwt = configuration.authentication.jwt {
            do {
                _ = try AccessFileWatcher.loadKeys(jwt.jwksFile)
            } catch let error as ConfigurationError {
                problems.append(error)
            } catch {
                problems.append(ConfigurationError(key: "authentication.jwt.jwksFile", problem: "\(error)"))
            }
        }
        return problems
    }

    /// Start-up failed: ONE JSON log line on standard error (like every other log line; no usage text),
    /// then exit status 1.
    static func fail(_ message: String, problems: [ConfigurationError] = []) -> ExitCode {
        let logger = Logger(label: "appstore-gateway") { label in JSONLogHandler(label: label) }
        var metadata: Logger.Metadata = [:]
        if let first = problems.first {
            metadata["key"] = .string(first.key)
            metadata["problem"] = .string(first.problem)
            metadata["problems"] = .array(problems.map { .string($0.description) })
        }
        let text = problems.first.map { "\(message): \($0)" } ?? message
        logger.critical("\(text)", metadata: metadata)
        return ExitCode(1)
    }
}

/// `appstore-gateway check-config --config FILE`: validates a configuration without serving.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a configuration file: prints one line per bad key; exit status 0 when it is valid, 1 when not."
    )

    @Option(name: .long, help: "The YAML configuration file.")
    var config: String

    func run() throws {
        let yaml: String
        switch ConfigurationLoading.text(of: config) {
        case .success(let text): yaml = text
        case .failure(let error):
            print(error)
            throw ExitCode(1)
        }
        let (configuration, problems) = ConfigurationLoading.problems(
            yaml: yaml, path: config, environment: ProcessInfo.processInfo.environment)
        for problem in problems { print(problem) }
        guard problems.isEmpty else { throw ExitCode(1) }
        print(
            "\(config): valid (\(configuration.apps.count) app(s): \(configuration.apps.map(\.name).joined(separator: ", ")))"
        )
    }
}
