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
        subcommands: [Rebuild.self])

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
            let configuration = try ConfigurationLoading.load(
                path: config, environment: ProcessInfo.processInfo.environment)
            let app: GatewayApp
            do {
                app = try GatewayApp(configuration, logger: Logger(label: "appstore-gateway"))
            } catch {
                throw ConfigurationLoading.fail(error.message, problems: error.problems)
            }
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
}
