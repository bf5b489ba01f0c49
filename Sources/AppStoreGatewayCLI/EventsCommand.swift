import AppStoreDomain
import ArgumentParser
import Configuration
import Dispatch
import Foundation
import GatewayApp
import GatewayFoundation
import Services

/// `appstore-gateway events …`: the outbound sinks of subscription events and notifications.
struct EventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "The outbound sinks (docs/subscription-events.md).",
        subcommands: [Replay.self])

    /// `events replay --webhook URL [--since T] [--config FILE]`: sends a sink's dead letters again.
    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Send a webhook's (or relay endpoint's) dead letters again, with the bodies they were given up with, "
                + "freshly signed; each one acknowledged (2xx) is removed. Safe while gateways serve the same store.")

        @Option(name: .long, help: "The URL of a subscriptions.webhooks (or notifications.forward) entry.")
        var webhook: String

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Only dead letters given up at or after this instant: RFC 3339 (2026-11-29T05:00:00Z) or a "
                    + "duration ago (2h, 30m, 7d)."))
        var since: String?

        @Option(name: .long, help: "The YAML configuration file; without it the built-in defaults are used.")
        var config: String?

        func run() throws {
            var deadSince: Int64 = 0
            if let since {
                let now = SystemClock().wallNow().millisecondsSince1970
                if let instant = RFC3339.milliseconds(since) {
                    deadSince = instant
                } else if let ago = DurationText.milliseconds(since) {
                    deadSince = now - Int64(clamping: ago)
                } else {
                    throw ValidationError(
                        "--since must be an RFC 3339 instant (2026-11-29T05:00:00Z) or a duration (2h), got '\(since)'")
                }
            }
            var yaml = ""
            if let config {
                switch ConfigurationLoading.text(of: config) {
                case .success(let text): yaml = text
                case .failure(let error): throw ConfigurationLoading.fail("invalid configuration", problems: [error])
                }
            }
            let (configuration, problems) = ConfigurationLoading.problems(
                yaml: yaml, path: config, environment: ProcessInfo.processInfo.environment, loadingFiles: false)
            guard problems.isEmpty else {
                throw ConfigurationLoading.fail("invalid configuration", problems: problems)
            }
            let outcome = Lock<Result<DeadLetterReplay.Report, GatewayStartError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            let url = webhook
            Task {
                do throws(GatewayStartError) {
                    let report = try await DeadLetterReplay.run(configuration, url: url, deadSince: deadSince)
                    outcome.withLock { $0 = .success(report) }
                } catch {
                    outcome.withLock { $0 = .failure(error) }
                }
                done.signal()
            }
            done.wait()
            switch outcome.withLock({ $0 }) {
            case .success(let report):
                var line = "appstore-gateway events replay: \(report.delivered) delivered, \(report.failed) failed"
                if let problem = report.lastProblem { line += " (last: \(problem))" }
                print(line)
                if report.failed > 0 { throw ExitCode(1) }
            case .failure(let error):
                throw ConfigurationLoading.fail(error.message, problems: error.problems)
            case nil:
                throw ExitCode(1)
            }
        }
    }
}
