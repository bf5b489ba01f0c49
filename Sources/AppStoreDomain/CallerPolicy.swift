/// The `callers` list as decisions: pure, built once from the configuration.
package struct CallerPolicy: Sendable {
    /// True when `callers` is absent: every caller (identified or not) may use every app.
    package let isOpen: Bool
    private let callers: [CallerName: ListedCaller]
    private let apps: AppDirectory

    /// The policy of `callers` (nil = open) over the configured `apps`.
    package init(callers: [ListedCaller]?, apps: [App]) {
        isOpen = callers == nil
        self.callers = Dictionary(
            (callers ?? []).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.apps = AppDirectory(apps)
    }

    /// Admits a caller proven to hold `names` (a JWT's `sub`, or a certificate's names in the order of
    /// `CallerName.certificateNames`; empty = anonymous): the first name listed in `callers` is the caller, with
    /// that entry's identity and weight; none listed is PERMISSION_DENIED, naming the first. Only names of one
    /// kind meet (`CallerName`). Open mode admits anyone, as the first name (unlisted) or anonymous.
    package func admit(_ names: [CallerName]) -> Result<CallerIdentity?, AccessRefusal> {
        guard !isOpen else { return .success(names.first.map { CallerIdentity(name: $0) }) }
        for name in names {
            if let caller = callers[name] {
                return .success(
                    CallerIdentity(
                        name: name, identity: caller.identity, weight: caller.weight, listed: true,
                        permissions: caller.granted, maxRealtimeStreams: caller.maxRealtimeStreams))
            }
        }
        return .failure(.unknownCaller(identity: names.first?.description ?? ""))
    }

    /// Admits an authenticated (or, in open mode, anonymous) caller by its one name (see `admit(_:)` above).
    package func admit(_ identity: CallerIdentity?) -> Result<CallerIdentity?, AccessRefusal> {
        if isOpen { return .success(identity) }
        return admit(identity.map { [$0.name] } ?? [])
    }

    /// Whether `caller` may name `app` (a name or bundle id; empty = the only configured app). An unknown app
    /// is allowed only to callers with "*" (they then get NOT_FOUND from the handler; others learn nothing).
    /// An empty name with several apps configured is allowed only with "*" (the handler then decides).
    package func authorize(_ caller: CallerIdentity?, app name: String) -> AccessRefusal? {
        guard !isOpen else { return nil }
        guard let caller, let entry = callers[caller.name] else {
            return .unknownCaller(identity: caller?.identity ?? "")
        }
        if entry.apps.contains("*") { return nil }
        let resolved = try? apps.app(named: name)
        if let resolved, entry.apps.contains(resolved.name) { return nil }
        return .appNotAllowed(identity: caller.identity, app: resolved?.name ?? name)
    }

    /// The listed callers that have no `permissions` key (they hold every permission), as configured.
    package var callersWithEveryPermission: [String] {
        callers.values.filter { $0.permissions == nil }.map(\.identity).sorted()
    }

    /// The identities listed (as configured), for bounded metric labels.
    package var listedIdentities: [String] { callers.values.map(\.identity).sorted() }
}
