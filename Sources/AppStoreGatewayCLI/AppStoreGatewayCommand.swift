import ArgumentParser

/// `appstore-gateway`: the gateway's command line.
@main
struct AppStoreGatewayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore-gateway",
        abstract: "A shared gRPC gateway to Apple's App Store Server API.",
        subcommands: [ServeCommand.self, CheckConfigCommand.self, SimulatorCommand.self],
        defaultSubcommand: ServeCommand.self)

    /// The allocator's tunables first (the process may start again once), then the command line.
    static func main() {
        AllocatorTuning.restartTunedIfUnset()
        main(nil)
    }
}
