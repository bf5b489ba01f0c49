import GatewayFoundation
import Logging

extension Logger.MetadataProvider {
    /// `trace_id` and `span_id` of the call the current task serves (`TraceContext.current`), so every log
    /// line a handler writes can be joined to its trace and its access-log line.
    public static let traceContext = Logger.MetadataProvider {
        guard let trace = TraceContext.current else { return [:] }
        return ["trace_id": .string(trace.traceID), "span_id": .string(trace.spanID)]
    }
}
