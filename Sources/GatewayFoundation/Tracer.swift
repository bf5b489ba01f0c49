/// Where the gateway's spans go: the one seam between the code that does the work (the gRPC server's calls,
/// the Apple client, the Redis budget, the webhook), which builds its own spans, and the exporter, so those
/// layers need not know how spans are sampled or sent. Every method is called on hot paths: implementations must be cheap,
/// thread-safe, and never block (a span that cannot be queued is dropped and counted).
public protocol Tracer: Sendable {
    /// Whether spans of `trace` are recorded: the sampler's decision, the same for every span of one trace
    /// context, so a call's spans are all recorded or none.
    func isSampled(_ trace: TraceContext) -> Bool
    /// Takes an ended span for export.
    func record(_ span: SpanRecord)
    /// Now, in nanoseconds since the UNIX epoch (span and event times).
    func unixNanos() -> UInt64
}

extension Tracer {
    /// The span of `trace` itself, whose id is `trace`'s span id and whose parent is the caller's span (the
    /// span of a served request), started at `startUnixNanos` (now when nil); nil when `trace` is not sampled.
    public func span(
        of trace: TraceContext, name: String, kind: SpanRecord.Kind, startUnixNanos: UInt64? = nil
    ) -> SpanRecord? {
        guard isSampled(trace) else { return nil }
        let id = trace.traceIDValue
        return SpanRecord(
            traceIDHigh: id.high, traceIDLow: id.low, spanID: trace.spanIDValue,
            parentSpanID: trace.parentSpanIDValue ?? 0, parentIsRemote: trace.parentSpanIDValue != nil,
            traceFlags: trace.flagsValue, name: name, kind: kind, startUnixNanos: startUnixNanos ?? unixNanos())
    }

    /// A span that is a child of `trace`'s span (work the gateway does for the request), with `spanID`
    /// (a fresh one when nil), started now; nil without a trace or when it is not sampled.
    public func childSpan(
        of trace: TraceContext?, name: String, kind: SpanRecord.Kind, spanID: UInt64? = nil
    ) -> SpanRecord? {
        guard let trace, isSampled(trace) else { return nil }
        let id = trace.traceIDValue
        var random = FastRandom()
        return SpanRecord(
            traceIDHigh: id.high, traceIDLow: id.low, spanID: spanID ?? TraceContext.newSpanID(&random),
            parentSpanID: trace.spanIDValue, parentIsRemote: false, traceFlags: trace.flagsValue, name: name,
            kind: kind, startUnixNanos: unixNanos())
    }

    /// Ends `span` now (unless an end was set) and records it; nothing for nil.
    public func end(_ span: SpanRecord?) {
        guard var span else { return }
        if span.endUnixNanos == 0 { span.endUnixNanos = max(span.startUnixNanos, unixNanos()) }
        record(span)
    }

    /// Adds the event `name`, now, to `span` (nothing for nil).
    public func addEvent(_ name: String, to span: inout SpanRecord?, attributes: [SpanRecord.Attribute] = []) {
        guard span != nil else { return }
        span?.events.append(SpanRecord.Event(name: name, timeUnixNanos: unixNanos(), attributes: attributes))
    }
}

/// Records nothing: tracing off (no OTLP endpoint). Nothing is sampled, so no span is ever built.
public struct SilentTracer: Tracer {
    public init() {}
    public func isSampled(_ trace: TraceContext) -> Bool { false }
    public func record(_ span: SpanRecord) {}
    public func unixNanos() -> UInt64 { 0 }
}
