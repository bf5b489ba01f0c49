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
            let configuration = try ConfigurationLoading.load(
                path: config, environment: ProcessInfo.processInfo.environment)
            let url = webhook
            let givenUpSince = deadSince
            let outcome = BlockingTask.wait { () -> Result<DeadLetterReplay.Report, GatewayStartError> in
                do throws(GatewayStartError) {
                    return .success(try await DeadLetterReplay.run(configuration, url: url, deadSince: givenUpSince))
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case .success(let report):
                var line = "appstore-gateway events replay: \(report.delivered) delivered, \(report.failed) failed"
                if let problem = report.lastProblem { line += " (last: \(problem))" }
                print(line)
                if report.failed > 0 { throw ExitCode(1) }
            case .failure(let error):
                throw ConfigurationLoading.fail(error.message, problems: error.problems)
            }
        }
    }
}
