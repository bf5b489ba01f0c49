import ArgumentParser
import Observability

/// `appstore-gateway`: the gateway's command line.
@main
struct AppStoreGatewayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore-gateway",
        abstract: "A shared gRPC gateway to Apple's App Store Server API, version \(BuildInfo.version).",
        // `--version` prints the string `appstore_gateway_build_info{version=…}` carries.
        version: BuildInfo.version,
        subcommands: [
            ServeCommand.self, CheckConfigCommand.self, SimulatorCommand.self, StateCommand.self, EventsCommand.self,
        ],
        defaultSubcommand: ServeCommand.self)
}
