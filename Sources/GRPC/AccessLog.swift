import GatewayFoundation

/// The access log: one line for each call the server finished, in a format and to a writer the server does not
/// know (Observability's JSON lines). The seam between the server, which knows each call, and the log, as
/// `Tracer` is for spans and `MetricsRegistry` for metrics. Health checks are left out by the server.
public protocol AccessLog: Sendable {
    /// What writes the lines of the calls of `method` on loop `loop`: asked once per method and loop when the
    /// server starts and used on that loop's thread only, so it may keep what it needs per method (the
    /// method's names escaped once). `path` is the method's path; nil for the `unknown` labels every unregistered
    /// path shares (each call then gives its own). Nil when the log writes no line for these calls.
    func writer(for method: RPCMethodLabels, path: String?, loop: Int) -> (any AccessLogWriter)?
}

/// Writes the access-log lines of one method's calls on one loop (see `AccessLog`).
public protocol AccessLogWriter: AnyObject, Sendable {
    /// The call of `path` ended with `status` after `seconds`: `metadata` is the caller's, `annotations` what
    /// the server and the handler noted (its identity, the app, Apple's request id).
    func write(
        path: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: CallAnnotations)
}
