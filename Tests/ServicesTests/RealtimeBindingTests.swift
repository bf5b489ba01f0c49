import AppStoreDomain
import Configuration
import ProtoCodec
import SignedData
import Testing

@testable import Services

/// Which configured app a realtime request is for: by its app Apple id in Production; in Sandbox by it when a
/// configured app has it, else the only app (Apple's libraries check the id in Production only), production apps
/// included (Apple's performance test runs in Sandbox).
@Suite struct RealtimeBindingTests {
    func app(
        _ name: String, id: Int64?, _ environment: GatewayConfiguration.EnvironmentPolicy
    ) -> GatewayConfiguration.App {
        GatewayConfiguration.App(
            name: name, bundleId: "com.example.\(name)", appAppleId: id, issuerId: "i", keyId: "K",
            privateKeyFile: "k.p8", environment: environment)
    }

    func request(_ environment: Environment, appAppleId: Int64) -> RealtimeRequest {
        var request = RealtimeRequest()
        request.environment = environment
        request.appAppleId = appAppleId
        return request
    }

    func bound(_ request: RealtimeRequest, _ apps: [GatewayConfiguration.App]) -> String? {
        RealtimeBinding.app(for: request, among: apps)?.0.name
    }

    @Test func aSandboxRequestReachesAProductionApp() throws {
        let apps = [app("one", id: 7, .production)]
        for id: Int64 in [7, 0, 42] {
            let found = try #require(RealtimeBinding.app(for: request(.sandbox, appAppleId: id), among: apps))
            #expect(found.0.name == "one")
            #expect(found.1.environment == .sandbox && found.1.appAppleID == nil)
            #expect(found.1.bundleID == "com.example.one")
        }
    }

    @Test func aProductionRequestNeedsItsAppsAppleId() throws {
        let apps = [app("one", id: 7, .production), app("two", id: 8, .auto), app("three", id: 9, .sandbox)]
        let found = try #require(RealtimeBinding.app(for: request(.production, appAppleId: 7), among: apps))
        #expect(found.0.name == "one" && found.1.environment == .production && found.1.appAppleID == 7)
        #expect(bound(request(.production, appAppleId: 8), apps) == "two")
        // A sandbox app takes no Production request; an unknown or absent id binds to nothing.
        #expect(bound(request(.production, appAppleId: 9), apps) == nil)
        #expect(bound(request(.production, appAppleId: 0), apps) == nil)
        #expect(bound(request(.production, appAppleId: 42), [app("one", id: 7, .production)]) == nil)
        #expect(bound(request(.production, appAppleId: 0), [app("x", id: nil, .sandbox)]) == nil)
    }

    @Test func severalAppsAreToldApartByTheirAppleIds() {
        let apps = [app("one", id: 7, .production), app("two", id: nil, .sandbox), app("three", id: 9, .auto)]
        #expect(bound(request(.sandbox, appAppleId: 7), apps) == "one")
        #expect(bound(request(.sandbox, appAppleId: 9), apps) == "three")
        // Without a configured id to match, several apps leave it unbound.
        #expect(bound(request(.sandbox, appAppleId: 0), apps) == nil)
        #expect(bound(request(.sandbox, appAppleId: 42), apps) == nil)
        #expect(bound(request(.sandbox, appAppleId: 5), [app("solo", id: nil, .sandbox)]) == "solo")
    }

    @Test func otherEnvironmentsAndXcodeAppsAreNotServed() {
        let apps = [app("one", id: 7, .auto)]
        for environment: Environment in [.xcode, .localTesting, .unspecified, .unrecognized(9)] {
            #expect(bound(request(environment, appAppleId: 7), apps) == nil)
        }
        let xcode = [app("local", id: 5, .xcode)]
        #expect(bound(request(.sandbox, appAppleId: 5), xcode) == nil)
        #expect(bound(request(.sandbox, appAppleId: 0), xcode) == nil)
        // An Xcode app is no candidate for a request without its id: the other app is the only one.
        #expect(bound(request(.sandbox, appAppleId: 0), xcode + [app("one", id: 7, .sandbox)]) == "one")
    }
}
