/// What a listed caller may do, beside which apps it may name (`callers[].permissions`). Every RPC needs exactly
/// one permission; a caller holds a set of them. Four kinds, by what a call can cost or reveal:
///
/// - `read`: every RPC that only reads (histories, statuses, lookups, VerifyJWS, StreamNotifications, the
///   gateway's own subscription state);
/// - `write`: every RPC that changes something at Apple (consumption, renewal extensions, the app account token,
///   finishing a transaction, test notifications, Retention Messaging and Advanced Commerce writes);
/// - `sign`: every signature the gateway makes with an app's key (offer signatures, Advanced Commerce in-app
///   requests);
/// - `realtime`: `ServeRealtimeRequests`, which takes a share of an app's realtime requests from Apple.
package struct CallerPermissions: OptionSet, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: UInt8

    package init(rawValue: UInt8) { self.rawValue = rawValue }

    package static let read = CallerPermissions(rawValue: 1 << 0)
    package static let write = CallerPermissions(rawValue: 1 << 1)
    package static let sign = CallerPermissions(rawValue: 1 << 2)
    package static let realtime = CallerPermissions(rawValue: 1 << 3)
    /// Every permission: a caller without `permissions`, and every caller in open mode.
    package static let all: CallerPermissions = [.read, .write, .sign, .realtime]

    /// Each permission with its configuration name, in this order.
    package static let named: [(name: String, permission: CallerPermissions)] = [
        ("read", .read), ("write", .write), ("sign", .sign), ("realtime", .realtime),
    ]

    /// The permission spelled `name` in `callers[].permissions` (nil = no such permission).
    package init?(named name: String) {
        guard let entry = Self.named.first(where: { $0.name == name }) else { return nil }
        self = entry.permission
    }

    /// The names of the permissions held, in the documented order, comma-separated.
    package var description: String {
        Self.named.filter { contains($0.permission) }.map(\.name).joined(separator: ",")
    }
}
