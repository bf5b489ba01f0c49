import AppStoreDomain
import ProtoCodec
import SignedData

/// Which configured app a verified realtime request is for, as Apple's libraries bind one
/// (`verifyAndDecodeRealtimeRequest`): a Production request by its `appAppleId`, a Sandbox request by its
/// `appAppleId` when a configured app has it, else to the only app configured, since Apple's libraries check the
/// app Apple id in Production only. Apple's performance test sends Sandbox requests, and must pass before the
/// Production realtime URL can be set, so an app configured `production` takes Sandbox requests too.
package enum RealtimeBinding {
    /// The app of `request` and the verification requirements that bind it; nil: no configured app takes it.
    package static func app(
        for request: RealtimeRequest, among apps: [App]
    ) -> (App, VerificationRequirements)? {
        let numbered = request.appAppleId == 0 ? nil : apps.first { $0.appAppleId == request.appAppleId }
        switch request.environment {
        case .production:
            guard let app = numbered, app.environment == .production || app.environment == .auto,
                let requirements = try? VerificationRequirements(
                    bundleID: app.bundleId, appAppleID: app.appAppleId, environment: .production)
            else { return nil }
            return (app, requirements)
        case .sandbox:
            // Apps that call Apple take Sandbox requests; an `xcode` app tests StoreKit locally and has none.
            let callers = apps.filter { $0.environment != .xcode }
            guard let app = numbered ?? (callers.count == 1 ? callers[0] : nil), app.environment != .xcode,
                let requirements = try? VerificationRequirements(bundleID: app.bundleId, environment: .sandbox)
            else { return nil }
            return (app, requirements)
        default:
            return nil
        }
    }
}
