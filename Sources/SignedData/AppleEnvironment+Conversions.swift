import AppStoreDomain
import ProtoCodec

// The one conversion between the environment types: `AppleEnvironment` (Apple's two servers, AppStoreDomain),
// `AppStoreEnvironment` (the four a payload may name, as Apple spells them) and the contract's wire enum
// `Environment`. The way back from the wire enum is `Environment.requested(field:)` in Services (it refuses
// Xcode and LocalTesting, which have no server).

extension AppStoreEnvironment {
    /// The environment of the server that answered.
    package init(_ environment: AppleEnvironment) {
        switch environment {
        case .production: self = .production
        case .sandbox: self = .sandbox
        }
    }
}

extension AppleEnvironment {
    /// The contract's wire enum for this server's environment.
    package var protoEnvironment: Environment { AppStoreEnvironment(self).protoEnvironment }
}
