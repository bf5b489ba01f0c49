import AppStoreDomain
import ArgumentParser
import Dispatch
import Foundation
import GRPC
import GatewayApp
import GatewayFoundation
import Logging
import Services

/// `appstore-gateway state …`: the subscription state kept beside the webhook's log.
struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "The subscription state (README \"Subscription state\").",
        subcommands: [Rebuild.self, Export.self])

    /// The gateway `config` describes, built to reach its store (no port is opened); a bad configuration exits
    /// as `serve` does.
    static func gateway(config: String) throws -> GatewayApp {
        let configuration = try ConfigurationLoading.load(
            path: config, environment: ProcessInfo.processInfo.environment)
        do {
            return try GatewayApp(configuration, logger: Logger(label: "appstore-gateway"))
        } catch {
            throw ConfigurationLoading.fail(error.message, problems: error.problems)
        }
    }

    /// `state rebuild --config FILE`: deletes the state and projects the notification log into it again.
    struct Rebuild: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Rebuild the subscription state from the webhook's notification log (after an upgrade, or a damaged "
                + "state). Safe while gateways serve the same file; what only Apple's API said is read again when asked."
        )

        @Option(name: .long, help: "The YAML configuration file.")
        var config: String

        func run() throws {
            let app = try StateCommand.gateway(config: config)
            // The count, or why it failed.
            let (count, problem) = BlockingTask.wait { () -> (Int?, String?) in
                do {
                    return (try await app.rebuildSubscriptionState(), nil)
                } catch {
                    return (nil, (error as? GatewayError)?.rpcStatus.message ?? "\(error)")
                }
            }
            guard let count else {
                print("appstore-gateway state rebuild failed: \(problem ?? "unknown")")
                throw ExitCode(1)
            }
            print("appstore-gateway state rebuilt: \(count) subscription(s)")
        }
    }

    /// `state export --config FILE --format csv [--app A] [--environment E] [--output PATH]`: every subscription and
    /// one-time purchase of the state, one CSV row each, derived at the export's instant as GetSubscription derives
    /// it (docs/subscription-state.md, "Export").
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Export the subscription state for a warehouse load: one row per subscription and one-time purchase, "
                + "their status and entitlements derived at this instant. Safe while gateways serve the same file; "
                + "opens no port, never calls Apple.")

        @Option(name: .long, help: "The YAML configuration file.")
        var config: String

        @Option(name: .long, help: "The output format: csv (RFC 4180, UTF-8, a header row).")
        var format: Format

        @Option(name: .long, help: "Only this app (its apps[].name or bundle id).")
        var app: String?

        @Option(name: .long, help: "Only this environment: Production or Sandbox.")
        var environment: ExportEnvironment?

        @Option(
            name: .long,
            help: "Write to this file (created 0600, replaced once complete) instead of the standard output.")
        var output: String?

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case csv
        }

        enum ExportEnvironment: String, ExpressibleByArgument, CaseIterable {
            case production = "Production"
            case sandbox = "Sandbox"

            init?(argument: String) {
                guard let value = Self.allCases.first(where: { $0.rawValue.lowercased() == argument.lowercased() })
                else { return nil }
                self = value
            }

            var apple: AppleEnvironment {
                switch self {
                case .production: .production
                case .sandbox: .sandbox
                }
            }
        }

        func run() throws {
            let app = try StateCommand.gateway(config: config)
            var export: SubscriptionStateExport
            do {
                export = try app.subscriptionStateExport(app: self.app, environment: environment?.apple)
            } catch {
                Self.report("appstore-gateway state export failed: \(error.rpcStatus.message)")
                throw ExitCode(1)
            }
            let sink: ExportFile
            do {
                sink = try ExportFile(path: output)
            } catch {
                Self.report("appstore-gateway state export failed: \(error)")
                throw ExitCode(1)
            }
            let outcome = BlockingTask.wait { () -> Result<SubscriptionStateExport, ExportFailure> in
                do {
                    try sink.write(CSV.record(SubscriptionStateExport.columns))
                    while let rows = try await export.nextRows() {
                        try sink.write(rows.map(CSV.record).joined())
                    }
                    try sink.finish()
                    return .success(export)
                } catch let error as GatewayError {
                    sink.abandon()
                    return .failure(ExportFailure(description: error.rpcStatus.message))
                } catch {
                    sink.abandon()
                    return .failure(ExportFailure(description: "\(error)"))
                }
            }
            switch outcome {
            case .success(let done):
                var line =
                    "appstore-gateway state exported: \(done.subscriptions) subscription(s), \(done.purchases) "
                    + "purchase(s) at \(RFC3339.string(milliseconds: done.nowMillis))"
                if done.skipped > 0 { line += "; \(done.skipped) of apps no longer configured left out" }
                if let output { line += " to \(output)" }
                Self.report(line)
            case .failure(let failure):
                Self.report("appstore-gateway state export failed: \(failure.description)")
                throw ExitCode(1)
            }
        }

        /// A line on the standard error (the standard output may be the CSV).
        static func report(_ line: String) {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }

        struct ExportFailure: Error, CustomStringConvertible {
            var description: String
        }
    }
}

/// Where an export is written: the standard output, or a file. A file is written beside its path (`PATH.partial`,
/// mode 0600: the rows name customers' tokens) and renamed over it once complete, so a load never reads half an
/// export; a failed export removes it.
final class ExportFile {
    private let handle: FileHandle
    private let path: String?
    private let partial: String?

    init(path: String?) throws {
        guard let path else {
            handle = FileHandle.standardOutput
            self.path = nil
            partial = nil
            return
        }
        let partial = path + ".partial"
        // What a failed run left; then a new file of our own, never one a link points at (O_EXCL).
        unlink(partial)
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StateCommand.Export.ExportFailure(
                description: "cannot create '\(partial)': \(String(cString: strerror(errno)))")
        }
        self.handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        self.path = path
        self.partial = partial
    }

    func write(_ text: String) throws {
        try handle.write(contentsOf: Data(text.utf8))
    }

    /// Makes the export visible: the file synced, closed and renamed over `path`.
    func finish() throws {
        guard let path, let partial else { return }
        try handle.synchronize()
        try handle.close()
        guard rename(partial, path) == 0 else {
            throw StateCommand.Export.ExportFailure(
                description: "cannot rename '\(partial)' to '\(path)': \(String(cString: strerror(errno)))")
        }
    }

    /// Removes what a failed export wrote.
    func abandon() {
        guard let partial else { return }
        try? handle.close()
        try? FileManager.default.removeItem(atPath: partial)
    }
}
