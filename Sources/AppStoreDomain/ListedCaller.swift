/// One entry of `callers`: an identity, the apps it may name and its share of an app's budget.
package struct ListedCaller: Sendable, Hashable {
    /// `callers[i].identity`, as configured: a JWT `sub` (bare or `jwt:<sub>`), a client certificate's URI
    /// SAN (`scheme://…` bare, or `uri:<uri>`), DNS SAN (`dns:<name>`) or CN (`cn:<name>`); see `CallerName`.
    package var identity: String
    /// `callers[i].apps`: configured app names (bundle ids are resolved to names at load); "*" = every app.
    package var apps: [String]
    /// `callers[i].weight`: the caller's share of an app's budget when callers compete (default 1).
    package var weight: Int
    /// `callers[i].permissions`: what the caller may do (`read`, `write`, `sign`, `realtime`); nil = the key is
    /// absent, which grants all four (with a warning at start).
    package var permissions: CallerPermissions?
    /// `callers[i].maxRealtimeStreams`: ServeRealtimeRequests streams the caller may hold open at once.
    package var maxRealtimeStreams: Int

    /// The default of `callers[i].maxRealtimeStreams`.
    package static let defaultMaxRealtimeStreams = 4

    package init(
        identity: String, apps: [String], weight: Int = 1, permissions: CallerPermissions? = nil,
        maxRealtimeStreams: Int = ListedCaller.defaultMaxRealtimeStreams
    ) {
        self.identity = identity
        self.apps = apps
        self.weight = weight
        self.permissions = permissions
        self.maxRealtimeStreams = maxRealtimeStreams
    }

    /// What the caller may do: its `permissions`, or all four without the key.
    package var granted: CallerPermissions { permissions ?? .all }

    /// The typed name `identity` stands for.
    package var name: CallerName { CallerName(listed: identity) }
}
